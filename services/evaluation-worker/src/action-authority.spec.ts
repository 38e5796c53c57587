import type { Privilege } from "@mdp/core";
import type { WorkOwner } from "@mdp/db";
import type { TestActions } from "@mdp/metadata-tests";
import { ActionAuthority } from "./action-authority";

const OWNER = "urn:li:corpuser:owner";
const CALLER = "urn:li:corpuser:caller";
const TAG_AND_OWN: TestActions = {
  passing: [],
  failing: [
    { type: "ADD_TAGS", params: { values: ["urn:li:tag:t"] } },
    { type: "ADD_OWNERS", params: { values: ["urn:li:corpuser:ann"] } },
  ],
};

/** A reader answering from a table by urn and token, counting its reads. */
function reader(table: Record<string, Privilege[]>) {
  const reads: string[] = [];
  const read = (p: WorkOwner) => {
    const key = `${p.urn}${p.tokenId ? `@${p.tokenId}` : ""}`;
    reads.push(key);
    return Promise.resolve(new Set(p.suspended ? [] : (table[key] ?? [])));
  };
  return { read, reads };
}

const test = (owner: Partial<WorkOwner> = {}, active = true) => ({
  owner: { urn: OWNER, tokenId: "owner-token", suspended: false, ...owner },
  active,
  actions: TAG_AND_OWN,
});

describe("ActionAuthority", () => {
  it("lets another caller's push use only what both it and the owner hold, each read once per push", async () => {
    const { read, reads } = reader({
      [`${OWNER}@owner-token`]: ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"],
      [`${CALLER}@caller-token`]: ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_DOMAINS"],
    });
    const authority = new ActionAuthority(read);
    const caller = { urn: CALLER, tokenId: "caller-token" };
    expect(await authority.withheld(test(), caller)).toEqual({ missing: new Set(["EDIT_ENTITY_OWNERS"]) });
    expect(await authority.withheld(test(), caller)).toEqual({ missing: new Set(["EDIT_ENTITY_OWNERS"]) });
    expect(reads).toEqual([`${OWNER}@owner-token`, `${CALLER}@caller-token`]);
    // The caller holding everything adds nothing to what the owner lacks.
    const lacking = new ActionAuthority(
      reader({
        [`${OWNER}@owner-token`]: ["EDIT_ENTITY_TAGS"],
        [CALLER]: ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"],
      }).read,
    );
    expect(await lacking.withheld(test(), { urn: CALLER, tokenId: null })).toEqual({
      missing: new Set(["EDIT_ENTITY_OWNERS"]),
    });
  });

  it("answers the owner's own push from the owner's read alone, through its token or none", async () => {
    const { read, reads } = reader({ [`${OWNER}@owner-token`]: ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"] });
    const authority = new ActionAuthority(read);
    expect(await authority.withheld(test(), { urn: OWNER, tokenId: null })).toBeUndefined();
    expect(await authority.withheld(test(), { urn: OWNER, tokenId: "owner-token" })).toBeUndefined();
    expect(reads).toEqual([`${OWNER}@owner-token`]);
    // Through another token of its own, that token bounds it too.
    expect(await authority.withheld(test(), { urn: OWNER, tokenId: "narrow" })).toEqual({
      missing: new Set(["EDIT_ENTITY_OWNERS", "EDIT_ENTITY_TAGS"]),
    });
  });

  it("withholds an INACTIVE test's actions from all but its owner, and a suspended test's from everyone", async () => {
    const all: Privilege[] = ["EDIT_ENTITY_TAGS", "EDIT_ENTITY_OWNERS"];
    const { read, reads } = reader({ [`${OWNER}@owner-token`]: all, [CALLER]: all });
    const authority = new ActionAuthority(read);
    expect(await authority.withheld(test({}, false), { urn: CALLER, tokenId: null })).toEqual({
      notApplied: "INACTIVE",
    });
    expect(reads).toEqual([]);
    expect(await authority.withheld(test({}, false), { urn: OWNER, tokenId: null })).toBeUndefined();
    expect(await authority.withheld(test({ suspended: true }), { urn: OWNER, tokenId: null })).toEqual({
      missing: new Set(all),
    });
  });
});
