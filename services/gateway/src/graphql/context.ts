import type { PrismaClient } from "@mdp/db";
import type { WebhookService } from "../webhooks/webhook.service";
import type { AuditService } from "../audit/audit.service";
import type { Actor } from "../auth/actor";
import type { RateLimits } from "../shared/rate-limits";
import type { DefinitionRunService } from "../metadata-tests/definition-run.service";
import type { MetadataTestService } from "../metadata-tests/metadata-test.service";
import type { TestRunService } from "../metadata-tests/test-run.service";
import type { TestRunDiffService } from "../metadata-tests/test-run-diff.service";
import type { TestImpactService } from "../metadata-tests/test-impact.service";
import type { RetentionService } from "../retention/retention.service";
import type { TaskService } from "../operations/task.service";
import type { GroupService } from "../policies/group.service";
import type { PolicyEngine } from "../policies/policy-engine";
import type { PolicyService } from "../policies/policy.service";
import type { DelegatedWorkService } from "../incident-response/delegated-work.service";
import type { ServiceAccountService } from "../service-accounts/service-account.service";
import type { TokenService } from "../tokens/token.service";
import type { TokenRotation } from "../tokens/token-rotation";
import type { TokenUsageService } from "../token-usage/token-usage.service";
import type { PlatformEventsService } from "../events/platform-events.service";
import type { WebAppService } from "../webapp/web-app.service";

/** The domain services resolvers call; built once per process. */
export interface Services {
  prisma: PrismaClient;
  /** webhook subscriptions, their delivery logs, replays */
  webhooks: WebhookService;
  tokens: TokenService;
  tokenRotation: TokenRotation;
  tokenUsage: TokenUsageService;
  policies: PolicyService;
  groups: GroupService;
  engine: PolicyEngine;
  audit: AuditService;
  tests: MetadataTestService;
  testRuns: TestRunService;
  /** runTestDefinition and runTests: evaluations through the evaluation worker */
  definitionRuns: DefinitionRunService;
  testRunDiffs: TestRunDiffService;
  testImpact: TestImpactService;
  tasks: TaskService;
  retention: RetentionService;
  rateLimits: RateLimits;
  delegatedWork: DelegatedWorkService;
  serviceAccounts: ServiceAccountService;
  /** listPlatformEvents */
  platformEvents: PlatformEventsService;
  /** what DataHub's web app asks around its settings pages: me's platformPrivileges, listUsers, listRoles */
  webApp: WebAppService;
}

export interface GraphQLContext {
  actor: Actor;
  services: Services;
}
