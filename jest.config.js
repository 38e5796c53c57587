/**
 * One jest config for the workspace, in three tiers a developer can run alone (`pnpm test:unit`, `test:integration`,
 * `test:e2e`); `pnpm test` runs all three.
 * - unit: specs beside the code (`src/**`), pure logic, no PostgreSQL or Redis;
 * - integration: each package's `test/*.int.spec.ts`, against real PostgreSQL and Redis, a database and queue prefix
 *   per file;
 * - e2e: `test/e2e/`, the real processes (and the Redis Cluster stage);
 * - build: `test/build/`, the production build (`pnpm build`) and the services started from it. Not part of `pnpm
 *   test` (which runs from the sources): CI builds, then runs it (`pnpm test:build`).
 */
const swc = [
  "@swc/jest",
  { jsc: { target: "es2022", parser: { syntax: "typescript" } }, module: { type: "commonjs" } },
];

const shared = {
  testEnvironment: "node",
  transform: { "^.+\\.ts$": swc },
  testPathIgnorePatterns: ["/node_modules/", "/generated/"],
  moduleFileExtensions: ["ts", "js", "json"],
  // The generated Prisma client imports its own .ts files with .js extensions.
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
};

module.exports = {
  projects: [
    {
      ...shared,
      displayName: "unit",
      testMatch: ["<rootDir>/{libs,services,cli}/**/src/**/*.spec.ts", "<rootDir>/scripts/**/*.spec.ts"],
    },
    {
      ...shared,
      displayName: "integration",
      testMatch: ["<rootDir>/{libs,services}/*/test/**/*.int.spec.ts"],
    },
    { ...shared, displayName: "e2e", testMatch: ["<rootDir>/test/e2e/**/*.e2e.spec.ts"] },
    { ...shared, displayName: "build", testMatch: ["<rootDir>/test/build/**/*.spec.ts"] },
  ],
  // Integration and service-level tests start databases and processes.
  testTimeout: 60_000,
  maxWorkers: 2,
};
