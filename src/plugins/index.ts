// Signed plugins: the one module the rest of the gateway imports them through.
export { hookModuleLoader, loadHookModule, PluginLoadError } from "./loader.ts";
export { inspectTarball, pluginResource, type InspectedPlugin, type PluginView } from "./inspect.ts";
export { installPlugin, type Installed } from "./install.ts";
export { strictBase64, trustPosture, type TrustPosture } from "./trust.ts";
