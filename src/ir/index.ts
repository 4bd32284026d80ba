export type * from "./request.ts";
export type * from "./stream.ts";
export * from "./response.ts";
export * from "./errors.ts";
