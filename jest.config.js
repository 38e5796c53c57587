/** One jest config for the workspace: unit specs beside the code, integration specs in each package's test/. */
const swc = [
  "@swc/jest",
  { jsc: { target: "es2022", parser: { syntax: "typescript" } }, module: { type: "commonjs" } },
];

module.exports = {
  testEnvironment: "node",
  transform: { "^.+\\.ts$": swc },
  testMatch: ["<rootDir>/{libs,services,bench,test,scripts,cli}/**/*.spec.ts"],
  testPathIgnorePatterns: ["/node_modules/", "/generated/"],
  moduleFileExtensions: ["ts", "js", "json"],
  // The generated Prisma client imports its own .ts files with .js extensions.
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  // Integration and service-level tests start databases and processes.
  testTimeout: 60_000,
  maxWorkers: 2,
};
