import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { AppContext, Actor, DriverActor } from '../context.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** `sync`: a bearer token, or the admin key (ERP connectors, back-office tools) when `X-Admin-Api-Key` is sent. */
export type AuthKind = 'none' | 'bearer' | 'admin' | 'sync';

type ActorFor<A extends AuthKind> = A extends 'bearer'
  ? DriverActor
  : A extends 'admin'
    ? Extract<Actor, { kind: 'admin' }>
    : A extends 'sync'
      ? Actor
      : undefined;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface HandlerInput<P, Q, B, A extends AuthKind> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  actor: ActorFor<A>;
  ctx: AppContext;
  req: Request;
  res: Response;
}

/** How a body that is not JSON is documented (multipart uploads); the handler reads it itself. */
export interface RawBody {
  contentType: 'multipart/form-data';
  schema: Record<string, unknown>;
}

/**
 * A route as data: validation schemas for each input kept apart, the response schema, and a
 * thin handler. `routeHandlers` binds these to express and `buildOpenApi` documents them.
 */
export interface RouteDefinition<P = unknown, Q = unknown, B = unknown, A extends AuthKind = AuthKind> {
  method: Method;
  /** OpenAPI-style path: `/me/cars/{car_id}`. */
  path: string;
  auth: A;
  /**
   * With `bearer`: authentication only verifies the token and marks the driver `accountUnread`;
   * the engine reads the account in the transaction the handler runs anyway (a push: one round
   * trip less). An answer that fails before the handler still reads the account first: a
   * deactivated account gets 401 whatever it sent.
   */
  checksAccount?: boolean;
  summary: string;
  tags: string[];
  params?: P;
  query?: Q;
  body?: B;
  rawBody?: RawBody;
  /** A JSON body larger than this is refused (413) before it is parsed; below BODY_LIMIT_BYTES. */
  bodyLimitBytes?: number;
  /** JSON response schema for 200; omitted for 204 and for handlers that write the response. */
  response?: z.ZodType;
  status?: 200 | 204;
  /** Content types of a binary 200 answer, for handlers that stream bytes themselves. */
  produces?: string[];
  /**
   * The answer carries an ETag, and a request whose If-None-Match names it gets 304. A JSON
   * handler returns a `Versioned` body and registration does the rest; a handler that writes
   * bytes itself (`produces`) sets the ETag and answers the 304 on its own.
   */
  conditional?: boolean;
  /** A list answered a page at a time on request, the next page named in the `Link` header (http/paging.ts). */
  paged?: boolean;
  errors?: number[];
  /**
   * A WebSocket endpoint: documented as its handshake (101) and the messages each side sends.
   * Upgrades never reach the handler, which answers only plain requests.
   */
  webSocket?: { clientMessages: z.ZodType; serverMessages: z.ZodType };
  /**
   * Answered before express, by the same middleware and binding on Node's own request and answer
   * (http/direct.ts): for the hottest routes, whose handler reads neither `req` nor `res`. Only a
   * path without parameters, and no `conditional` answer.
   */
  direct?: boolean;
  /** More than the summary says, for the API reference. */
  description?: string;
  handler: (input: HandlerInput<P, Q, B, A>) => Promise<unknown>;
}

/** JSON already made, with a version that changes whenever it does. */
export interface Versioned {
  version: string;
  body: Buffer;
}

export function route<
  A extends AuthKind,
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(def: RouteDefinition<P, Q, B, A>): RouteDefinition<P, Q, B, A> {
  return def;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDefinition<any, any, any, any>;
