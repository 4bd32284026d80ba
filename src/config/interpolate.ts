// `${VAR}` interpolation over the config text, before YAML parsing, so a variable may stand for any
// scalar (a port, a flag, a key). `${VAR:-fallback}` supplies a default; `$${` is a literal `${`.
// Whole-line comments are left alone so a commented-out `${VAR}` never stops startup.

export interface InterpolationResult {
  text: string;
  errors: string[];
}

const REFERENCE = /\$(\$?)\{([^}]*)\}/g;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function interpolate(text: string, env: Record<string, string | undefined>, source: string): InterpolationResult {
  const errors: string[] = [];
  const lines = text.split("\n").map((line, index) => {
    if (/^\s*#/.test(line)) return line;
    return line.replace(REFERENCE, (whole, escaped: string, body: string) => {
      if (escaped) return whole.slice(1);
      const fallbackAt = body.indexOf(":-");
      const name = fallbackAt === -1 ? body : body.slice(0, fallbackAt);
      if (!VAR_NAME.test(name)) {
        errors.push(`${source}:${index + 1}: malformed variable reference "${whole}"`);
        return whole;
      }
      const value = env[name];
      if (value !== undefined) return value;
      if (fallbackAt !== -1) return body.slice(fallbackAt + 2);
      errors.push(`${source}:${index + 1}: environment variable ${name} is not set (referenced as \${${name}})`);
      return whole;
    });
  });
  return { text: lines.join("\n"), errors };
}
