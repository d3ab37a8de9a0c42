// Prints a development token: npm run token -- <personalnummer>
const personalnummer = process.argv[2];
const base = process.env.TOURLINE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`;
if (!personalnummer || !/^\d+$/.test(personalnummer)) {
  console.error('usage: npm run token -- <personalnummer>');
  process.exit(2);
}
try {
  const response = await fetch(`${base}/dev/token`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ personalnummer: Number(personalnummer) }),
  });
  const body = await response.json();
  if (!response.ok) {
    console.error(`${response.status} ${body.title ?? ''}: ${body.detail ?? ''}`);
    process.exit(1);
  }
  console.log(body.accessToken);
} catch (error) {
  console.error(`Cannot reach Tourline at ${base} (is it running with AUTH_MODE=dev?): ${(error as Error).message}`);
  process.exit(1);
}
