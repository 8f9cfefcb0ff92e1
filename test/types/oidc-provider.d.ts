// oidc-provider ships no types; the test helper uses it through this loose declaration.
declare module 'oidc-provider' {
  const Provider: any
  export default Provider
}
