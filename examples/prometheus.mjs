// Run: npx tsup && node examples/prometheus.mjs
import * as client from 'prom-client';
import { Pool } from 'endpoint-pool';
import { prometheusSink } from 'endpoint-pool/prometheus';

const registry = new client.Registry();
const pool = new Pool({
  endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }],
  classify: () => 'transient',
  metrics: prometheusSink({ client, registry, labels: { pool: 'demo' } }),
});
await pool.execute(async (conn) => {
  if (conn === 'a') throw new Error('a is down');
  return conn;
});
console.log((await registry.metrics()).split('\n').filter((l) => l.startsWith('endpoint_pool_') && !l.includes('_bucket')).join('\n'));
await pool.close();
