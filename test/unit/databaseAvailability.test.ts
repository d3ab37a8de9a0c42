import { describe, expect, it } from 'vitest';
import { databaseFault, DatabaseUnavailable } from '../../server/db/availability.js';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });
// drizzle wraps the driver's error: the PostgreSQL error sits in `cause`.
const wrapped = (cause: unknown) => Object.assign(new Error('Failed query: SELECT 1'), { cause });

describe('databaseFault', () => {
  it.each([
    ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['admin shutdown (57P01)', pgError('57P01', 'terminating connection due to administrator command')],
    ['crash shutdown (57P02)', pgError('57P02')],
    ['starting up (57P03)', pgError('57P03', 'the database system is starting up')],
    ['a connection exception (08006)', pgError('08006')],
    ['a connection ended by the server', new Error('Connection terminated unexpectedly')],
    ['no answer on our side', new Error('Query read timeout')],
    ['no pooled connection in time', new Error('timeout exceeded when trying to connect')],
    ['our own health check timing out', new DatabaseUnavailable('no answer')],
  ])('takes %s for an unreachable database, also wrapped', (_name, error) => {
    expect(databaseFault(error)).toBe('unreachable');
    expect(databaseFault(wrapped(error))).toBe('unreachable');
  });

  it.each([
    ['too many clients (53300)', pgError('53300', 'sorry, too many clients already')],
    ['a lock timeout (55P03)', pgError('55P03', 'canceling statement due to lock timeout')],
    ['a statement timeout (57014)', pgError('57014', 'canceling statement due to statement timeout')],
  ])('takes %s for a busy database', (_name, error) => {
    expect(databaseFault(wrapped(error))).toBe('busy');
  });

  it.each([
    ['a unique violation', pgError('23505')],
    ['a syntax error', pgError('42601')],
    ['a wrong password', pgError('28P01', 'password authentication failed')],
    ['a bug', new TypeError('cannot read properties of undefined')],
    ['nothing', undefined],
  ])('takes %s for no database fault', (_name, error) => {
    expect(databaseFault(wrapped(error))).toBeUndefined();
  });
});
