import { AdminToursQuery, AdminToursResponse } from '../../../shared/schemas/adminTours.js';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { toursOfDay } from '../../queries/adminTours.js';
import { route } from '../route.js';

const tags = ['Back office'];

export const adminTourRoutes = [
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
];
