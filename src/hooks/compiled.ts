// Hook plugins compiled into this binary (InfoView.build.hook_plugins). Signed plugins loaded at run
// time are listed by GET /plugins, not here.
export const COMPILED_HOOK_PLUGINS: readonly string[] = [];
