import { AdminToursQuery, AdminToursResponse, AdminWriteBacksResponse } from '../../../shared/schemas/adminDay.js';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { openWriteBacks, toursOfDay } from '../../queries/adminDay.js';
import { route } from '../route.js';

const tags = ['Back office'];

export const adminDayRoutes = [
  route({
    method: 'get',
    path: '/admin/tours',
    auth: 'admin',
    tags,
    summary: 'Every tour of a day (default today in Berlin) with its deliveries by state and its lines by progress',
    query: AdminToursQuery,
    response: AdminToursResponse,
    handler: ({ ctx, query }) => toursOfDay(ctx.database.db, query.date ?? berlinDate(new Date())),
  }),
  route({
    method: 'get',
    path: '/admin/write-backs',
    auth: 'admin',
    tags,
    summary: 'Completions whose ERP write-back is still open or failed, oldest first; POST /admin/push-completion sends one again',
    response: AdminWriteBacksResponse,
    handler: ({ ctx }) => openWriteBacks(ctx.database.db),
  }),
];
