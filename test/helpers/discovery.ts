/**
 * The tool-search golden queries (docs/discovery.md › Golden queries): each query, the top results
 * it must give, in order, over the generated catalogue (test/fixtures/catalogue.ts behind the upstream
 * prefix `gen`) and over the three reference servers. The unit test checks the first set on the
 * index directly; the e2e test checks both through a real daemon in both eras. The docs' table is
 * this list with the reasons.
 */

/** One golden query and its expected top results (exposed names), best first. */
export interface Golden { query: string, top: string[] }

/** Over the 1,024 generated tools, exposed as `gen__<name>`. */
export const GENERATED_GOLDENS: readonly Golden[] = [
  { query: 'create invoice', top: ['gen__acme_billing_create_invoice', 'gen__globex_billing_create_invoice', 'gen__hooli_billing_create_invoice'] },
  { query: 'refund a payment globex', top: ['gen__globex_billing_create_refund', 'gen__globex_billing_delete_refund', 'gen__globex_billing_get_refund'] },
  { query: 'weathr forcast', top: ['gen__acme_weather_delete_forecast', 'gen__globex_weather_delete_forecast', 'gen__hooli_weather_delete_forecast'] },
  { query: 'dueDate', top: ['gen__acme_billing_create_invoice', 'gen__globex_billing_create_invoice', 'gen__hooli_billing_create_invoice'] },
  { query: 'hurricane', top: ['gen__acme_weather_create_stormAlert', 'gen__acme_weather_delete_stormAlert', 'gen__globex_weather_create_stormAlert'] },
  { query: 'wonka_chat_delete_reaction', top: ['gen__wonka_chat_delete_reaction', 'gen__wonka_chat_get_reaction', 'gen__wonka_chat_create_reaction'] },
  { query: 'umbrella pull request', top: ['gen__umbrella_code_delete_pullRequest', 'gen__umbrella_code_get_pullRequest', 'gen__umbrella_code_create_pullRequest'] }
]

/** The generated tools as the daemon exposes them with the upstream named `gen`. */
export function prefixed<T extends { name: string }> (tools: readonly T[], prefix = 'gen'): T[] {
  return tools.map(tool => ({ ...tool, name: `${prefix}__${tool.name}` }))
}

/** Over the three reference servers (everything, memory, filesystem) behind one endpoint. */
export const REFERENCE_GOLDENS: readonly Golden[] = [
  { query: 'read a file', top: ['filesystem__read_multiple_files', 'filesystem__read_file', 'filesystem__read_text_file'] },
  { query: 'knowledge graph entities', top: ['memory__create_entities', 'memory__delete_entities', 'memory__read_graph'] },
  { query: 'echo', top: ['everything__echo'] },
  { query: 'add two numbers', top: ['memory__add_observations', 'everything__get-sum', 'everything__trigger-url-elicitation'] },
  { query: 'directory tree', top: ['filesystem__directory_tree', 'filesystem__create_directory', 'filesystem__list_directory'] },
  { query: 'observations', top: ['memory__add_observations', 'memory__delete_observations', 'memory__search_nodes'] }
]
