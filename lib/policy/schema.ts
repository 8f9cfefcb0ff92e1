/**
 * The JSON Schema of the config sections the policy layer reads: `policy` (lib/policy/rules.ts) and
 * `servers` (lib/policy/endpoints.ts). lib/config/schema.ts assembles them into the config's schema.
 */
import { DURATION_SCHEMA } from '../base/duration.js'

/** `confirm` of a policy rule or a curated endpoint (docs/policy.md › Confirmation). */
const CONFIRM_SCHEMA = {
  description: 'calls of these tools need a human\'s yes first: globs of tool names (catalogue or exposed), or { tools: globs, destructive: true } (tools whose destructiveHint is true, after overrides)',
  oneOf: [
    { type: 'array', items: { type: 'string', minLength: 1 } },
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        tools: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of tool names' },
        destructive: { type: 'boolean', description: 'true: every tool whose annotations.destructiveHint is true, as the endpoint lists it' }
      }
    }
  ]
}

/** `confirmation` (docs/policy.md › Confirmation): how the gate asks. */
export const CONFIRMATION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  default: {},
  description: 'how the human confirmation gate asks (docs/policy.md › Confirmation); which tools it gates is `confirm` on policy rules and curated endpoints',
  properties: {
    expiry: { ...DURATION_SCHEMA, default: '2m', description: 'how long a question, and the approval it yields, stays valid (ms)' },
    redact: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: ['*password*', '*passwd*', '*secret*', '*token*', '*apikey*', '*api_key*', '*api-key*', 'authorization', '*credential*', '*private_key*'],
      description: 'globs of argument names (case-insensitive, at any depth) whose values the question shows as [redacted]; replaces the default list'
    },
    maxArgumentChars: { type: 'integer', minimum: 16, maximum: 100000, default: 1000, description: 'most characters of the arguments\' JSON the question shows (characters)' }
  }
}

/** Globs per kind, for `policy` rules. */
const KIND_GLOBS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tools: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue tool names (`*` any run of characters, `?` one)' },
    prompts: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue prompt names' },
    resources: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of resource URIs (and resource template uriTemplates)' },
    skills: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of skill SKILL.md URIs, as /mcp lists them (Skills extension)' }
  }
}

/** `policy` (docs/policy.md › Policy). */
export const POLICY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  description: 'who may see and call what; absent: everything is allowed to every caller',
  properties: {
    default: { enum: ['allow', 'deny'], default: 'deny', description: '"allow": everything is visible unless a rule denies it; "deny": only what a rule allows' },
    rules: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          principals: {
            type: 'object',
            additionalProperties: false,
            description: 'who the rule is for; every key given must match; absent: every caller',
            properties: {
              tokens: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'names of static tokens (auth.tokens[].name)' },
              subjects: {
                type: 'array',
                items: { type: 'object', additionalProperties: false, required: ['issuer', 'subject'], properties: { issuer: { type: 'string', minLength: 1 }, subject: { type: 'string', minLength: 1 } } },
                description: 'OAuth callers by issuer and subject'
              },
              scopes: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'every scope listed must be held (a static token\'s scopes count)' },
              claims: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, description: 'each value equal to the claim, or contained in it (array claims)' },
              local: { type: 'boolean', description: 'true: the stdio caller (mcpx serve)' }
            }
          },
          servers: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'curated endpoints it applies on; absent: every endpoint, /mcp included' },
          allow: KIND_GLOBS,
          deny: KIND_GLOBS,
          rateLimit: {
            type: 'object',
            additionalProperties: false,
            required: ['calls', 'per'],
            description: 'calls per window, counted per (principal, tool) for the tools this rule allows',
            properties: { calls: { type: 'integer', minimum: 1 }, per: { ...DURATION_SCHEMA, description: 'window (ms or duration string)' } }
          },
          confirm: CONFIRM_SCHEMA
        }
      }
    }
  }
}

/** allow/deny globs of one kind, for a curated endpoint. */
const SERVER_GLOBS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    allow: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs of catalogue names (resources: URIs); absent: nothing of this kind' },
    deny: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'globs that win over allow' }
  }
}

/** `discovery`, top level (for `/mcp` and plain `mcpx serve`) and per curated endpoint (docs/discovery.md › Tool search). */
export const DISCOVERY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  description: 'how clients find tools: "list" (tools/list lists them) or "search" (tools/list lists search_tools and call_tool)',
  properties: {
    mode: { enum: ['list', 'search'], default: 'list', description: '"list": today\'s tools/list; "search": the two meta-tools instead' },
    maxResults: { type: 'integer', minimum: 1, maximum: 50, default: 8, description: 'tools a search returns when the client gives no limit, and at most whatever it gives (a count)' }
  }
}

/** `servers` (docs/policy.md › Curated endpoints). */
export const SERVERS_SCHEMA = {
  type: 'object',
  description: 'curated endpoints, served at <prefix>/mcp/<name> and by mcpx serve --server <name>',
  propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
  additionalProperties: {
    type: 'object',
    additionalProperties: false,
    properties: {
      tools: SERVER_GLOBS,
      prompts: SERVER_GLOBS,
      resources: SERVER_GLOBS,
      skills: SERVER_GLOBS,
      rename: { type: 'object', additionalProperties: { type: 'string', minLength: 1 }, description: 'catalogue tool name → the name this endpoint exposes' },
      override: {
        type: 'object',
        description: 'per catalogue tool name: description, title and annotations to list instead of the upstream\'s',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          properties: { description: { type: 'string' }, title: { type: 'string' }, annotations: { type: 'object' } }
        }
      },
      defaults: { type: 'object', additionalProperties: { type: 'object' }, description: 'per catalogue tool name: arguments filled in when the client leaves them out (and dropped from required)' },
      discovery: DISCOVERY_SCHEMA,
      confirm: CONFIRM_SCHEMA
    }
  }
}
