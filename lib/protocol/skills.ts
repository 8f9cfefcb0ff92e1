/**
 * The Skills extension's vocabulary (SEP-2640, `io.modelcontextprotocol/skills`), as the wire spells it
 * (@modelcontextprotocol/core `ext/skills` constants.ts and schemas.ts), and the pure rewriting of one
 * upstream's skill URIs into mcpx's namespace. No state: the upstream layer reads it to list and route
 * skills (lib/upstreams/registry.ts), the dispatcher to serve them (lib/dispatch/methods/skills.ts).
 *
 * Namespacing (docs/skills.md › Names and URIs): a skill is named by the URI of its `SKILL.md`; an
 * upstream with prefix `P` (lib/upstreams/registry.ts: its name when several upstreams are configured)
 * has every `skill://` URI it serves moved under one more leading segment, `skill://<rest>` →
 * `skill://P/<rest>`. A skill's own name (its frontmatter) and its files' bytes are never changed: a
 * host verifies the `SKILL.md` frontmatter against the entry's and each file against its digest
 * (SEP-2640), so both must pass through verbatim; the skill's last path segment (its name by the
 * Agent Skills layout) stays last. URIs of another scheme (an upstream's own `baseUri`) pass unchanged.
 */
import { isObject, type JsonObject } from './jsonrpc.js'

/** The extension's identifier under `capabilities.extensions` (SEP-2640). */
export const SKILLS_EXTENSION = 'io.modelcontextprotocol/skills'

/** Enumerates the skills a server serves (paged). */
export const SKILLS_LIST = 'skills/list'
/** One skill's entry by its `SKILL.md` URI. */
export const SKILLS_GET = 'skills/get'
/** The direct children of a directory resource (gated by the extension's `directoryRead`). */
export const DIRECTORY_READ = 'resources/directory/read'

/** The scheme of the URIs mcpx namespaces. */
export const SKILL_SCHEME = 'skill://'

/** The file that names a skill: its entry's `uri` ends with it. */
export const SKILL_MANIFEST = 'SKILL.md'

/**
 * The extension's capability object of a server's capabilities (`extensions["io.modelcontextprotocol/skills"]`),
 * or undefined when it does not declare the extension (or declares a non-object). Never throws.
 */
export function skillsCapabilityOf (capabilities: unknown): JsonObject | undefined {
  if (!isObject(capabilities) || !isObject(capabilities.extensions)) return undefined
  const value = capabilities.extensions[SKILLS_EXTENSION]
  return isObject(value) ? value : undefined
}

/**
 * The downstream form of an upstream's URI: `skill://<rest>` → `skill://<prefix>/<rest>`; unchanged
 * when `prefix` is `''` or the URI is of another scheme. Never throws.
 */
export function namespaceSkillUri (prefix: string, uri: string): string {
  return prefix === '' || !uri.startsWith(SKILL_SCHEME) ? uri : `${SKILL_SCHEME}${prefix}/${uri.slice(SKILL_SCHEME.length)}`
}

/**
 * The root of a skill (its folder, ending with `/`), from its `SKILL.md` URI; undefined when the URI
 * does not end with `/SKILL.md`. Never throws.
 */
export function skillRootOf (manifestUri: string): string | undefined {
  return manifestUri.endsWith('/' + SKILL_MANIFEST) ? manifestUri.slice(0, -SKILL_MANIFEST.length) : undefined
}

/**
 * A skill entry (SEP-2640 `Skill`: `uri`, `frontmatter`, `resources` an array of `{ uri, digest, size }`
 * or `"dynamic"`, `_meta`) with its URIs in the downstream form. Everything else, digests and sizes
 * included, is kept as the upstream sent it; the input is not changed. Never throws.
 */
export function namespaceSkill (prefix: string, skill: JsonObject): JsonObject {
  if (prefix === '') return skill
  const out: JsonObject = { ...skill }
  if (typeof skill.uri === 'string') out.uri = namespaceSkillUri(prefix, skill.uri)
  if (Array.isArray(skill.resources)) {
    out.resources = skill.resources.map(file => isObject(file) && typeof file.uri === 'string' ? { ...file, uri: namespaceSkillUri(prefix, file.uri) } : file)
  }
  return out
}
