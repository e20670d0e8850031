import { defineConfig } from 'vitest/config';

// Unit tests of the panel's model (test/*.spec.ts), in Node: the server is `test/server.ts`.
export default defineConfig({
  test: {
    include: ['test/**/*.spec.ts'],
    environment: 'node'
  }
});
