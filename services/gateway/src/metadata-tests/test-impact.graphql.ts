import { needs, resolver } from "../graphql/resolver";

export const testImpactTypeDefs = /* GraphQL */ `
  "Entities whose result would change one way, and the first few of them (at most 20, in urn order)."
  type TestImpactFlips {
    count: Int!
    examples: [String!]!
  }

  "An action of the edited definition, and the sampled entities a push would run it on."
  type TestImpactAction {
    "SUCCESS: one of its passing actions; FAILURE: a failing one."
    on: TestResultType!
    type: String!
    "Its params, as JSON."
    params: String!
    "Sampled entities whose result under the edited definition runs it."
    entities: Int!
    "Of those, the ones whose result under the current definition does not."
    newly: Int!
  }

  """
  What saving an edited definition would change, from the current and the edited definitions evaluated side by side on
  the same entities at the same moment. Nothing is written.
  """
  type TestImpactPreview {
    testUrn: String!
    "When the sample was evaluated (epoch ms)."
    evaluatedAt: Long!
    "Entities of the types either definition selects."
    total: Int!
    "Entities evaluated: the first sampleSize in urn order."
    sampled: Int!
    sampleSize: Int!
    "True when the sample is the whole set (sampled = total); false: the counts are of the sample only."
    whole: Boolean!
    passToFail: TestImpactFlips!
    failToPass: TestImpactFlips!
    "Sampled entities the current definition does not select and the edited one does."
    startsApplying: Int!
    "Sampled entities the current definition selects and the edited one no longer does."
    stopsApplying: Int!
    unchangedPassing: Int!
    unchangedFailing: Int!
    actions: [TestImpactAction!]!
  }

  extend type Query {
    """
    Before saving an edited definition of an existing test (updateTest): how many entities would flip and which
    actions would fire, evaluated by an evaluation worker on a sample (sampleSize 1–5,000, default 1,000; whole says
    whether it is every entity). Needs what saving it needs: MANAGE_TESTS and the privileges of its actions. Writes
    nothing; counts as one of the caller's runTest calls.
    """
    previewTestImpact(
      "The existing test's urn."
      urn: String!
      "The edited definition, as JSON text."
      definition: TestDefinitionInput!
      "How many entities to evaluate at most (the first in urn order), 1 to 5,000."
      sampleSize: Int = 1000
    ): TestImpactPreview!
  }
`;

export const testImpactResolvers = {
  Query: {
    previewTestImpact: resolver(
      { requires: needs("MANAGE_TESTS", "preview a metadata test's edit"), args: (s) => s.testImpact.args },
      (s, actor, args) => s.testImpact.preview(actor, args),
    ),
  },
};
