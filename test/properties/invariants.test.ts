import { test } from 'vitest';
import { scenarioArb } from './sim.js';
import { checkScenarios } from './run.js';

const N = Number(process.env['FC_RUNS'] ?? 200);
test('mixed faults', async () => console.log(await checkScenarios('mixed', scenarioArb(), N)), 600_000);
test('breakers', async () => console.log(await checkScenarios('b', scenarioArb({ ok: 2, transient: 6, hang: 2, permanent: 0, narrower: 0, sync: 0 }), N)), 600_000);
test('limits', async () => console.log(await checkScenarios('l', scenarioArb({ rateLimit: 0.9, maxInFlight: 0.8, maxCalls: 2, rateLimited: 4 }), N)), 600_000);
