import { defineConfig } from 'vitest/config';

/**
 * The black-box test files: they reach the service only over HTTP and WebSocket (and its database
 * directly), so they run in the `build` project too, against the built service started as the
 * image starts it (`npm run test:build`). The others need the service in process: its context,
 * logger or clock, an injected ERP or store (msw intercepts only this process), the development
 * identity provider, or they start processes themselves. A test of a black-box file that reaches
 * in is marked `inProcess.it` (test/helpers/target.ts).
 */
const blackBox = [
  'test/integration/admin.test.ts',
  'test/integration/adminCompletedDeliveries.test.ts',
  'test/integration/adminPaging.test.ts',
  'test/integration/adminReviews.test.ts',
  'test/integration/attachmentPreviews.test.ts',
  'test/integration/authorization.test.ts',
  'test/integration/changeEventIds.test.ts',
  'test/integration/clientWindow.test.ts',
  'test/integration/compression.test.ts',
  'test/integration/cors.test.ts',
  'test/integration/deliveryMoney.test.ts',
  'test/integration/deliveryNotes.test.ts',
  'test/integration/deliveryOperations.test.ts',
  'test/integration/deliveryReportPdf.test.ts',
  'test/integration/directAnswers.test.ts',
  'test/integration/documentsS3.test.ts',
  'test/integration/engine.test.ts',
  'test/integration/erpImportRuns.test.ts',
  'test/integration/errors.test.ts',
  'test/integration/eventRetention.test.ts',
  'test/integration/masterData.test.ts',
  'test/integration/noteImages.test.ts',
  'test/integration/openapi.test.ts',
  'test/integration/previewShapes.test.ts',
  'test/integration/probes.test.ts',
  'test/integration/realIssuer.test.ts',
  'test/integration/syncChanges.test.ts',
  'test/integration/syncPush.test.ts',
  'test/integration/syncWs.test.ts',
  'test/integration/timeOrderedIds.test.ts',
  'test/integration/tourReads.test.ts',
  'test/integration/tours.test.ts',
  'test/integration/wsDeactivation.test.ts',
  'test/sdk/browser.test.ts',
  'test/sdk/settleOnEvents.test.ts',
  'test/sdk/sync.integration.test.ts',
  'test/sdk/verdicts.integration.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'source', include: ['test/**/*.test.ts', 'shared/**/*.test.ts', 'client-sdk/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'build',
          include: blackBox,
          globalSetup: ['test/helpers/buildSetup.ts'],
          env: { TOURLINE_TEST_TARGET: 'build' },
        },
      },
    ],
  },
});
