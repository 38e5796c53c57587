/** What the schedule ownership tests share (schedule-ownership-*.int.spec.ts): their users, documents and views. */

export const EDITOR = "urn:li:corpuser:editor";
export const OTHER_MANAGER = "urn:li:corpuser:other-manager";
export const OPS = "urn:li:corpuser:ops";
export const CAPPER = "urn:li:corpuser:capper";
export const RUNNER = "urn:li:corpuser:runner";
export const VICTIM = "urn:li:corpuser:victim";
export const NOBODY = "urn:li:corpuser:nobody";

export const definition = (actions?: unknown) =>
  JSON.stringify({
    on: { types: ["dataset"] },
    rules: { property: "datasetProperties.description", operator: "exists" },
    ...(actions !== undefined && { actions }),
  });
export const TAGGING = { passing: [{ type: "ADD_TAGS", values: ["urn:li:tag:documented"] }], failing: [] };
export const OWNING = { passing: [{ type: "ADD_OWNERS", values: ["urn:li:corpuser:steward"] }], failing: [] };

export const CREATE_TEST = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
export const UPDATE_TEST = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
export const TEST = `query($urn: String!) { test(urn: $urn) { ownerUrn createdBy schedule { cron suspendedAt suspendedReason } } }`;
export const RESUME_TEST = `mutation($urn: String!) { resumeTestSchedule(urn: $urn) }`;
export const POLICY_FIELDS = "urn createdBy ownerUrn suspendedAt suspendedReason";
export const CREATE_POLICY = `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { ${POLICY_FIELDS} } }`;
export const UPDATE_POLICY = `mutation($u: String!, $i: UpdateRetentionPolicyInput!) { updateRetentionPolicy(urn: $u, input: $i) { ${POLICY_FIELDS} } }`;
export const POLICY = `query($u: String!) { retentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`;
export const RESUME_POLICY = `mutation($u: String!) { resumeRetentionPolicy(urn: $u) { ${POLICY_FIELDS} } }`;
export const WORK_FIELDS = "kind urn ownerUrn viaTokenId state suspendedAt suspendedReason cancelRequested";
export const DELEGATED = `query($i: DelegatedWorkInput!) { delegatedWork(input: $i) { ${WORK_FIELDS} } }`;
export const REVOKE = `mutation($i: RevokeActorAccessInput!) {
  revokeActorAccess(input: $i) { revokedTokenIds suspendedWork { ${WORK_FIELDS} } }
}`;

export interface TestView {
  ownerUrn: string;
  createdBy: string;
  schedule: { cron: string; suspendedAt: number | null; suspendedReason: string | null } | null;
}
export interface PolicyView {
  urn: string;
  createdBy: string;
  ownerUrn: string;
  suspendedAt: number | null;
  suspendedReason: string | null;
}
export interface Work {
  kind: string;
  urn: string;
  ownerUrn: string;
  viaTokenId: string | null;
  state: string;
  suspendedAt: number | null;
  suspendedReason: string | null;
  cancelRequested: boolean | null;
}
