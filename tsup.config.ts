import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'fetch/index': 'src/fetch/index.ts',
    'keys/index': 'src/keys/index.ts',
    'viem/index': 'src/viem/index.ts',
    'prometheus/index': 'src/prometheus/index.ts',
    'otel/index': 'src/otel/index.ts',
    'redis/index': 'src/redis/index.ts',
    'ethers/index': 'src/ethers/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  splitting: true,
  treeshake: true,
});
