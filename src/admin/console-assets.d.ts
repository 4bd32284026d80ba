// The console's files, baked in by scripts/compile.ts (console/build.ts); absent when run from source.
declare module "gateway:console-assets" {
  const assets: Record<string, { readonly type: string; readonly gzip: string; readonly immutable: boolean }>;
  export default assets;
}
