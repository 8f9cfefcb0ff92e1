/**
 * What a request's upstream calls carry (lib/upstreams/contract.ts UpstreamCallOptions): its signal,
 * era and span, the caller and the owner an isolated upstream picks its instance by, where the
 * upstream's log lines, progress and questions go, and the `_meta` the upstream sees. A method
 * handler makes them once per request (MethodDeps.callOptions) and hands them down: to the registry,
 * to the MRTR bridge (lib/dispatch/mrtr.ts) or to Tasks (lib/dispatch/tasks.ts), which never call back here.
 */
import { METHOD_NOT_FOUND, type JsonRpcNotification, type JsonRpcRequest, UpstreamRpcError, type JsonObject } from '../protocol/jsonrpc.js'
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL } from '../protocol/inbound.js'
import type { InstanceOwner } from '../upstreams/isolation.js'
import type { UpstreamCallOptions, UpstreamQuestion } from '../upstreams/contract.js'
import type { CancelSignal } from '../base/cancel.js'
import type { DispatchContext } from './context.js'
import { ELICITATION_COMPLETE, type MrtrBridge } from './mrtr.js'
import { requestMeta } from './envelope.js'

/**
 * Whom a request's upstream calls serve (isolated upstreams): its session (legacy session, the stdio
 * client) and its principal, as UpstreamCallOptions `owner` and `principalKey`. An isolated
 * upstream picks its instance by them (lib/upstreams/isolation.ts instanceKeyOf); subscriptions and
 * notification listeners name their owner the same way, so an instance's events reach exactly it.
 * Writes the fields into `who` (a new object by default: call options pass themselves, so a call
 * allocates nothing more) and returns it. Never throws.
 */
export function instanceOwnerOf<T extends InstanceOwner = InstanceOwner> (ctx: Pick<DispatchContext, 'sessionId' | 'principal' | 'instanceHome'>, who: T = {} as T): T {
  if (ctx.sessionId !== undefined) who.owner = ctx.sessionId
  if (ctx.principal !== undefined) who.principalKey = ctx.principal
  // Redis store: the session's own instance follows its stored subscriptions (lib/sessions/redis-store.ts).
  if (ctx.instanceHome !== undefined) who.home = ctx.instanceHome
  return who
}

/**
 * The options of one upstream call made for `request` in `ctx`. A question the upstream asks is
 * first put to `questions` (the MRTR bridge's capability rule), then relayed through `ctx.ask`.
 * Never throws (its `onQuestion` rejects with the refusal).
 */
export function callOptions (request: JsonRpcRequest, ctx: DispatchContext, questions: Pick<MrtrBridge, 'refusal'>): UpstreamCallOptions {
  const meta = requestMeta(request, ctx) // the `_meta` the face classified; read from the request only when it classified none
  const progressToken = meta?.progressToken
  const options: UpstreamCallOptions = { signal: ctx.signal, era: ctx.era }
  if (ctx.trace !== undefined) options.trace = ctx.trace // a child span per upstream call (lib/telemetry/trace.ts)
  if (ctx.caller !== undefined) options.principal = ctx.caller // per-caller upstream credentials
  // Whose questions and log lines, which isolated instance, and where it lives (isolated upstreams).
  instanceOwnerOf(ctx, options)
  const notify = ctx.notify
  // Log lines go to a legacy client as they come (it opted in by declaring nothing: legacy servers
  // send logs unless logging/setLevel says otherwise); a modern client gets them only when its
  // request set a logLevel, which the upstream also sees and filters by (DIGEST §6f).
  // notifications/elicitation/complete (of a URL-mode elicitation the call relayed) exists
  // only in 2025-11-25 (DIGEST §6, method table): it goes to a legacy client, never to a modern one.
  if (notify !== undefined && (ctx.era === 'legacy' || typeof meta?.[META_LOG_LEVEL] === 'string')) {
    const legacy = ctx.era === 'legacy'
    options.onNotification = (n) => {
      if (n.method !== 'notifications/message' && !(legacy && n.method === ELICITATION_COMPLETE)) return
      const notification: JsonRpcNotification = { jsonrpc: '2.0', method: n.method }
      if (n.params !== undefined) notification.params = n.params
      notify(notification)
    }
  }
  if ((typeof progressToken === 'string' || typeof progressToken === 'number') && ctx.notify !== undefined) {
    const notify = ctx.notify
    // Once per notification of a flood, so built property by property: with an object
    // spread here (`{ ...p, progressToken }`) Node 20's V8 promoted these short-lived objects to
    // the old generation (alone in a loop: 20% of what it allocated, against 0.2% without), which
    // grew by ~4 MB/s under a flood to a stalled client until a major GC (RSS past 300 MB with 4
    // stalled calls; flat without the spread). Same bytes on the wire.
    options.onProgress = (p) => {
      const params: JsonObject = { progress: p.progress }
      if (p.total !== undefined) params.total = p.total
      if (p.message !== undefined) params.message = p.message
      params.progressToken = progressToken
      notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
    }
  }
  const ask = ctx.ask
  if (ask !== undefined || ctx.era === 'modern') {
    options.onQuestion = async (question: UpstreamQuestion, signal: CancelSignal) => {
      // 2026-07-28 (basic/index.mdx; DIGEST §6a): a capability the server needs and the
      // request did not declare is -32021 to the client, whatever the upstream makes of the refusal.
      const refused = questions.refusal(question, ctx)
      if (refused !== undefined) throw refused
      // A 2026-07-28 client takes no server→client requests (DIGEST §6c row 17). On tools/call,
      // prompts/get and resources/read the MRTR bridge (lib/dispatch/mrtr.ts MrtrBridge) replaces this handler:
      // it parks the call and returns the question as an input_required result. Elsewhere: a clear refusal.
      if (ask === undefined) throw new UpstreamRpcError(METHOD_NOT_FOUND, `mcpx cannot relay ${question.method} to a 2026-07-28 client`)
      return await ask(question, signal)
    }
  }
  // The upstream sees the capabilities of the client mcpx serves, not mcpx's own: a modern
  // upstream must not ask for inputs that client cannot give (legacy upstreams ignore the key).
  // Keyed stores rather than `{ [META_CLIENT_CAPABILITIES]: … }`: a computed key in a literal is a
  // runtime call per request in optimised code (Runtime_DefineKeyedOwnPropertyInLiteral in a profile).
  const upstreamMeta: JsonObject = {}
  upstreamMeta[META_CLIENT_CAPABILITIES] = ctx.clientCapabilities
  options.meta = upstreamMeta
  if (ctx.era === 'modern' && typeof meta?.[META_LOG_LEVEL] === 'string') upstreamMeta[META_LOG_LEVEL] = meta[META_LOG_LEVEL]
  // A legacy client gets log lines unless it lowered the level (a legacy server sends every level
  // before logging/setLevel); a modern upstream sends none without a per-request logLevel, so ask
  // it for everything and let the legacy client see what a legacy upstream would have sent.
  if (ctx.era === 'legacy') upstreamMeta[META_LOG_LEVEL] = 'debug'
  return options
}
