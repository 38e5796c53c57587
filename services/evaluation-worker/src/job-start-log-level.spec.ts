import { jobStartLogLevel } from "./evaluation-handler";

describe("jobStartLogLevel", () => {
  it("logs an evaluate batch's start at debug: its end line says all the start line did", () => {
    expect(jobStartLogLevel({ data: { kind: "evaluate", items: [] } })).toBe("debug");
  });

  it("logs the start of a runTest or previewTest at info: they can run for minutes", () => {
    expect(jobStartLogLevel({ data: { kind: "runTest" } })).toBe("info");
    expect(jobStartLogLevel({ data: { kind: "previewTest" } })).toBe("info");
    expect(jobStartLogLevel({ data: undefined })).toBe("info");
  });
});
