import { checkEvaluateJobReply, evaluateJobReply } from "./results";

const answered = {
  items: {
    "task-1": { resultsJson: { "urn:li:dataset:a": '{"urn":"urn:li:dataset:a"}' }, evaluationMs: 1.5 },
    "task-2": { resultsJson: {}, evaluationMs: 0 },
  },
  partial: true,
};

describe("checkEvaluateJobReply", () => {
  it("accepts a reply of answered items as the schema does", () => {
    const checked = checkEvaluateJobReply(answered);
    expect(checked.success).toBe(true);
    expect(checked.data).toEqual(evaluateJobReply.parse(answered));
  });

  it("reads refusals and an earlier worker's result objects through the schema", () => {
    const reply = {
      items: {
        refused: { refused: { code: "NOT_FOUND", message: "Entity urn:li:dataset:x does not exist" } },
        earlier: { results: {} },
      },
    };
    expect(checkEvaluateJobReply(reply)).toEqual(evaluateJobReply.safeParse(reply));
  });

  it("answers a reply with keys beside the results as the schema does (stripped), never with them", () => {
    const reply = { items: { t: { resultsJson: {}, refused: null } }, extra: 1 };
    const checked = checkEvaluateJobReply(reply);
    expect(checked).toEqual(evaluateJobReply.safeParse(reply));
    if (checked.success) expect(checked.data.items.t).not.toHaveProperty("refused");
  });

  it.each([
    ["a result that is not text", { items: { t: { resultsJson: { u: { urn: "u" } } } } }],
    ["a negative evaluation time", { items: { t: { resultsJson: {}, evaluationMs: -1 } } }],
    ["an evaluation time that is not a number", { items: { t: { resultsJson: {}, evaluationMs: "1" } } }],
    ["partial other than true", { items: {}, partial: false }],
    ["no items", { partial: true }],
    ["items that are not an object", { items: [] }],
  ])("refuses %s, as the schema does", (_, reply) => {
    expect(checkEvaluateJobReply(reply).success).toBe(false);
    expect(evaluateJobReply.safeParse(reply).success).toBe(false);
  });
});
