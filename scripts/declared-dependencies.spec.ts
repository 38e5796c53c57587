/**
 * Each workspace package declares what it imports and imports what it declares, and a version shared by several
 * manifests comes from the catalog (scripts/declared-dependencies.ts says why each rule holds).
 */
import { checkDependencies } from "./declared-dependencies";

it("every package declares what it imports, through the catalog where versions are shared", () => {
  expect(checkDependencies().map(({ pkg, problem }) => `${pkg}: ${problem}`)).toEqual([]);
});
