import { z } from 'zod';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { IsoDate } from '../../../shared/schemas/common.js';
import { ImportRunList, ImportRunsQuery, ImportSummary } from '../../../shared/schemas/imports.js';
import { runImport } from '../../jobs/erpImport.js';
import { importRuns } from '../../queries/importRuns.js';
import { linkNext, pageCursor } from '../paging.js';
import { route } from '../route.js';

const runsCursor = pageCursor('import-runs', z.tuple([z.iso.datetime(), z.uuid()]));

export const adminImportRoutes = [
  route({
    method: 'post',
    path: '/admin/import-erp',
    auth: 'admin',
    tags: ['Admin'],
    summary: 'Import the ERP tours of a day now (default today, Europe/Berlin); every run is logged',
    query: z.object({ date: IsoDate.optional() }),
    response: ImportSummary,
    errors: [502],
    handler: ({ ctx, query }) => runImport(ctx, query.date ?? berlinDate(ctx.clock()), 'manual'),
  }),
  route({
    method: 'get',
    path: '/admin/import-runs',
    auth: 'admin',
    tags: ['Admin'],
    summary: 'The logged ERP import runs (scheduled, start-up, retries, manual), newest first, optionally of one tour date',
    description:
      'With `limit` or `cursor`, one page; the `Link` header (rel="next") names the next page and is absent on the last. ' +
      'Without either, the whole list (docs/back-office.md, "Paging").',
    query: ImportRunsQuery,
    response: ImportRunList,
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const filter = query.date ?? '';
      const page = runsCursor.request(query, filter);
      const { entries, next } = await importRuns(ctx.database.db, query.date ?? null, page);
      if (page) linkNext(req, res, page.limit, next && runsCursor.write(filter, next));
      return { count: entries.length, runs: entries };
    },
  }),
];
