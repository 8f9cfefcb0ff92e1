/** When the OTEL_* environment turns tracing on (lib/telemetry/trace.ts; docs/operating.md › Tracing). */
import t from 'tap'
import { activeTracing, sessionHash, tracingWantedByEnv, httpTraceIn } from '../../lib/telemetry/trace.js'

t.test('trace/env/otel-variables-decide', async t => {
  t.equal(tracingWantedByEnv({}), false, 'off by default')
  t.equal(tracingWantedByEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true, 'an OTLP endpoint turns it on')
  t.equal(tracingWantedByEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true)
  t.equal(tracingWantedByEnv({ OTEL_TRACES_EXPORTER: 'otlp' }), true, 'OTEL_TRACES_EXPORTER=otlp (default endpoint)')
  t.equal(tracingWantedByEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), false, 'none wins')
  t.equal(tracingWantedByEnv({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }), false, 'OTEL_SDK_DISABLED wins')
  t.throws(() => tracingWantedByEnv({ OTEL_TRACES_EXPORTER: 'console' }), /OTLP only/, 'console would write to stdout: refused')
  t.throws(() => tracingWantedByEnv({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER=zipkin/)
})

t.test('trace/off/seams-answer-undefined', async t => {
  t.equal(activeTracing(), undefined)
  t.equal(httpTraceIn({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }), undefined, 'no TraceIn is built when off')
  t.match(sessionHash('a-session-id'), /^[0-9a-f]{16}$/)
  t.not(sessionHash('a'), sessionHash('b'))
})
