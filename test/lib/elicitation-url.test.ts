/**
 * The elicitation-mode capability rule (lib/dispatch/mrtr.ts elicitationModeMissing, missingCapabilities;
 * URL-mode elicitation; 2025-11-25 and 2026-07-28 ClientCapabilities.elicitation): the
 * part a spec-following upstream never exercises end to end (it reads the client's capabilities
 * and does not ask), so it is checked here against an upstream result that asks anyway.
 */
import t from 'tap'
import { elicitationModeMissing, missingCapabilities } from '../../lib/dispatch/mrtr.js'

const URL_ASK = { mode: 'url', url: 'https://auth.example/x', message: 'Confirm' }
const FORM_ASK = { message: 'Who?', requestedSchema: { type: 'object', properties: {} } }

t.test('elicitation-url/capability/modes-declared', async t => {
  t.equal(elicitationModeMissing('elicitation/create', URL_ASK, { elicitation: { url: {} } }), undefined, 'url declared: url may be asked')
  t.equal(elicitationModeMissing('elicitation/create', URL_ASK, { elicitation: {} }), 'url', 'elicitation: {} is form only')
  t.equal(elicitationModeMissing('elicitation/create', URL_ASK, { elicitation: { form: {} } }), 'url')
  t.equal(elicitationModeMissing('elicitation/create', FORM_ASK, { elicitation: {} }), undefined, 'form, by the empty object')
  t.equal(elicitationModeMissing('elicitation/create', { ...FORM_ASK, mode: 'form' }, { elicitation: { url: {} } }), 'form', 'url only: no form')
  t.equal(elicitationModeMissing('sampling/createMessage', URL_ASK, {}), undefined, 'not an elicitation')
})

t.test('elicitation-url/capability/input-required-asking-anyway-is-32021-material', async t => {
  const result = { resultType: 'input_required', inputRequests: { a: { method: 'elicitation/create', params: URL_ASK }, b: { method: 'sampling/createMessage', params: {} } } }
  t.same(missingCapabilities(result, { elicitation: {} }), { elicitation: { url: {} }, sampling: {} }, 'each missing capability, the url mode under elicitation')
  t.equal(missingCapabilities(result, { elicitation: { url: {} }, sampling: {} }), undefined, 'nothing missing')
  t.same(missingCapabilities({ resultType: 'input_required', inputRequests: { a: { method: 'elicitation/create', params: URL_ASK } } }, {}), { elicitation: {} }, 'no elicitation at all: the capability itself')
})
