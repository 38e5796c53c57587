import { annotateActions } from "./action-annotations";
import { planActions, type ActionRun } from "./action-planner";
import { privilegesLacking, withoutRefused } from "./action-privileges";

const A = "urn:li:test:a";
const B = "urn:li:test:b";
const T1 = "urn:li:tag:t1";
const T2 = "urn:li:tag:t2";
const ANN = "urn:li:corpuser:ann";
const run = (test: string, outcome: ActionRun["outcome"], ...actions: ActionRun["actions"]): ActionRun => ({
  test,
  outcome,
  actions,
});
const tags = (...urns: string[]) => ({ tags: urns.map((tag) => ({ tag })) });

describe("planActions", () => {
  it("writes each aspect once with DataHub's shapes, stamped with the test and the time", () => {
    const plan = planActions(
      { globalTags: { tags: [{ tag: T1, context: "kept" }] } },
      [
        run(
          A,
          "failing",
          { type: "ADD_TAGS", params: { values: [T1, T2] } },
          { type: "ADD_GLOSSARY_TERMS", params: { values: ["urn:li:glossaryTerm:pii"] } },
          { type: "ADD_OWNERS", params: { values: [ANN] } },
          { type: "SET_DOMAIN", params: { values: ["urn:li:domain:finance"] } },
          { type: "DEPRECATE", params: {} },
        ),
      ],
      1000,
    );
    expect(Object.fromEntries(plan.writes.map((w) => [w.aspect, w.value]))).toEqual({
      globalTags: { tags: [{ tag: T1, context: "kept" }, { tag: T2 }] },
      glossaryTerms: { terms: [{ urn: "urn:li:glossaryTerm:pii" }], auditStamp: { time: 1000, actor: A } },
      ownership: { owners: [{ owner: ANN, type: "TECHNICAL_OWNER" }], lastModified: { time: 1000, actor: A } },
      domains: { domains: ["urn:li:domain:finance"] },
      deprecation: { deprecated: true, note: "Deprecated via metadata tests", actor: A },
    });
    expect(plan.actions.map((a) => a.wouldChange)).toEqual([true, true, true, true, true]);
  });

  it("changes nothing when re-run on its own result, and says so", () => {
    const runs = [
      run(
        A,
        "passing",
        { type: "REMOVE_TAGS", params: { values: [T1] } },
        { type: "ADD_OWNERS", params: { values: [ANN], ownerType: ["DATA_STEWARD"] } },
        { type: "UNSET_DOMAIN", params: {} },
        { type: "UN_DEPRECATE", params: {} },
      ),
    ];
    const first = planActions(
      {
        globalTags: tags(T1, T2),
        domains: { domains: ["urn:li:domain:x"] },
        deprecation: { deprecated: true, note: "old", actor: ANN },
      },
      runs,
      1,
    );
    const after = Object.fromEntries(first.writes.map((w) => [w.aspect, w.value]));
    const second = planActions(after, runs, 2);
    expect(second.writes).toEqual([]);
    expect(second.actions.every((a) => !a.wouldChange)).toBe(true);
  });

  it("leaves an absent aspect absent when there is nothing to remove", () => {
    const plan = planActions(
      {},
      [run(A, "failing", { type: "REMOVE_TAGS", params: { values: [T1] } }, { type: "UN_DEPRECATE", params: {} })],
      1,
    );
    expect(plan.writes).toEqual([]);
  });

  it("keeps a deprecation it did not make: DEPRECATE does not rewrite a person's note", () => {
    const plan = planActions(
      { deprecation: { deprecated: true, note: "use orders_v2", actor: ANN } },
      [run(A, "failing", { type: "DEPRECATE", params: { note: ["no owner"] } })],
      1,
    );
    expect(plan.writes).toEqual([]);
  });

  it("resolves conflicts in one order: passing before failing, tests by urn, a later action winning", () => {
    // B passes and adds t1; A fails and removes it: failing comes last, so the tag goes, whatever the input order.
    const conflict = [
      run(A, "failing", { type: "REMOVE_TAGS", params: { values: [T1] } }),
      run(B, "passing", { type: "ADD_TAGS", params: { values: [T1] } }),
    ];
    const plan = planActions({ globalTags: tags(T1) }, conflict, 1);
    expect(plan.writes).toEqual([{ aspect: "globalTags", value: { tags: [] }, tests: [A] }]);
    expect(plan.actions.map((a) => [a.test, a.type, a.wouldChange])).toEqual([
      [B, "ADD_TAGS", false],
      [A, "REMOVE_TAGS", true],
    ]);
    expect(planActions({ globalTags: tags(T1) }, [...conflict].reverse(), 1)).toEqual(plan);
    // Without the tag stored, adding then removing it ends where it began: nothing is written or claimed.
    const none = planActions({}, conflict, 1);
    expect(none.writes).toEqual([]);
    expect(none.actions.some((a) => a.wouldChange)).toBe(false);
    // Two tests of one outcome setting different domains: the greater urn wins.
    const domains = planActions(
      {},
      [
        run(B, "failing", { type: "SET_DOMAIN", params: { values: ["urn:li:domain:b"] } }),
        run(A, "failing", { type: "SET_DOMAIN", params: { values: ["urn:li:domain:a"] } }),
      ],
      1,
    );
    expect(domains.writes).toEqual([{ aspect: "domains", value: { domains: ["urn:li:domain:b"] }, tests: [B] }]);
  });

  it("removes every ownership type of an owner and keeps other owners and fields", () => {
    const plan = planActions(
      {
        ownership: {
          owners: [
            { owner: ANN, type: "DATAOWNER" },
            { owner: ANN, type: "TECHNICAL_OWNER" },
            { owner: "urn:li:corpuser:bob", type: "BUSINESS_OWNER", source: { type: "MANUAL" } },
          ],
          ownerTypes: {},
        },
      },
      [run(A, "failing", { type: "REMOVE_OWNERS", params: { values: [ANN] } })],
      5,
    );
    expect(plan.writes[0]!.value).toEqual({
      owners: [{ owner: "urn:li:corpuser:bob", type: "BUSINESS_OWNER", source: { type: "MANUAL" } }],
      ownerTypes: {},
      lastModified: { time: 5, actor: A },
    });
  });
});

describe("actions their test's owner may not write", () => {
  const flag = run(
    A,
    "failing",
    { type: "ADD_TAGS", params: { values: [T1] } },
    { type: "ADD_OWNERS", params: { values: [ANN] } },
    { type: "REMOVE_TAGS", params: { values: [T2] } },
  );

  it("names what an owner lacks of the privileges its actions need, each once", () => {
    const actions = { passing: [], failing: [...flag.actions] };
    expect(privilegesLacking(actions, new Set(["MANAGE_TESTS"] as const))).toEqual([
      "EDIT_ENTITY_OWNERS",
      "EDIT_ENTITY_TAGS",
    ]);
    expect(privilegesLacking(actions, new Set(["EDIT_ENTITY_TAGS"] as const))).toEqual(["EDIT_ENTITY_OWNERS"]);
    expect(privilegesLacking(undefined, new Set())).toEqual([]);
  });

  it("keeps, in order, only the actions whose privilege the owner holds", () => {
    const other = run(B, "failing", { type: "DEPRECATE", params: {} });
    const allowed = withoutRefused([flag, other], (test) =>
      test === A ? new Set(["EDIT_ENTITY_OWNERS"] as const) : undefined,
    );
    expect(allowed).toEqual([
      run(
        A,
        "failing",
        { type: "ADD_TAGS", params: { values: [T1] } },
        { type: "REMOVE_TAGS", params: { values: [T2] } },
      ),
      other,
    ]);
    // A run left with nothing is dropped.
    expect(withoutRefused([other], () => new Set(["EDIT_ENTITY_DEPRECATION"] as const))).toEqual([]);
  });

  it("lists a refused action in the dry view with its missing privilege, changing nothing, and plans without it", () => {
    const evaluation = {
      urn: "urn:li:dataset:(urn:li:dataPlatform:hive,x,PROD)",
      passing: [],
      failing: [{ test: A, type: "FAILURE" as const, failedRules: [] }],
      notApplicable: [],
      evaluatedAt: 1,
    };
    const entity = { urn: evaluation.urn, entityType: "dataset", aspects: {} };
    const annotated = annotateActions(
      evaluation,
      entity,
      () => ({ passing: [], failing: [...flag.actions] }),
      () => new Set(["EDIT_ENTITY_TAGS"] as const),
    );
    expect(annotated.failing[0]!.actions).toEqual([
      { type: "ADD_TAGS", params: { values: [T1] }, wouldChange: false, missingPrivilege: "EDIT_ENTITY_TAGS" },
      { type: "ADD_OWNERS", params: { values: [ANN] }, wouldChange: true },
      { type: "REMOVE_TAGS", params: { values: [T2] }, wouldChange: false, missingPrivilege: "EDIT_ENTITY_TAGS" },
    ]);
  });

  it("lists every action of a withheld test as not applied, and plans the other tests' without them", () => {
    const evaluation = {
      urn: "urn:li:dataset:(urn:li:dataPlatform:hive,x,PROD)",
      passing: [],
      failing: [
        { test: A, type: "FAILURE" as const, failedRules: [] },
        { test: B, type: "FAILURE" as const, failedRules: [] },
      ],
      notApplicable: [],
      evaluatedAt: 1,
    };
    const entity = { urn: evaluation.urn, entityType: "dataset", aspects: {} };
    // A adds T1; B removes it: with A withheld, B's removal changes nothing.
    const annotated = annotateActions(
      evaluation,
      entity,
      (test) => ({
        passing: [],
        failing: [{ type: test === A ? "ADD_TAGS" : "REMOVE_TAGS", params: { values: [T1] } }],
      }),
      () => undefined,
      (test) => (test === A ? "INACTIVE" : undefined),
    );
    expect(annotated.failing.map((r) => r.actions)).toEqual([
      [{ type: "ADD_TAGS", params: { values: [T1] }, wouldChange: false, notApplied: "INACTIVE" }],
      [{ type: "REMOVE_TAGS", params: { values: [T1] }, wouldChange: false }],
    ]);
  });
});
