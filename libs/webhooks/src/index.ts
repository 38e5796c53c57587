export * from "./circuit";
export * from "./events";
export * from "./signing";
export * from "./targets";
