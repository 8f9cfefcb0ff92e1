/**
 * The names of every tap test in the suite, read from the test sources without running them, for
 * the requirement coverage test (test/lib/requirements.test.ts).
 *
 * Each `<t>.test(name, …)` call in `test/**\/*.test.ts` (fixtures excluded) yields one name per value
 * of its template: `${revision}` bound by an enclosing `for (const revision of LEGACY)` is expanded
 * over the loop's array when that array is a literal, a `const` of the same file, or an exported
 * `const` of a file it imports (followed through `../helpers/*.js` to the `.ts` source). Destructured
 * loops (`for (const [a, b] of …)`, `for (const { x: a } of …)`) expand row by row. A placeholder that
 * cannot be resolved stays in the name as `${…}` and matches any text without `/`, so it can cite
 * an id only where it sits; one in the first segment makes the name fail the scheme check.
 *
 * Pure static analysis with the TypeScript compiler API: nothing here imports or runs a test file.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join, dirname, relative, resolve } from 'node:path'
import ts from 'typescript'

/** One registered test name. `text` shows unresolved placeholders as `${expr}`. */
export interface TestName {
  /** Path of the source file, relative to the test directory. */
  file: string
  /** 1-based line of the `t.test(` call. */
  line: number
  /** The name with every resolvable placeholder expanded. */
  text: string
  /** Whether `id` is this name (unresolved placeholders match `[^/]*`). */
  matches: (id: string) => boolean
}

type Row = ReadonlyMap<string, string>
type Value = string | readonly (string | undefined)[] | Readonly<Record<string, string | undefined>> | undefined

const sources = new Map<string, ts.SourceFile>()
function source (path: string): ts.SourceFile {
  let file = sources.get(path)
  if (file === undefined) {
    file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
    sources.set(path, file)
  }
  return file
}

function unwrap (expr: ts.Expression): ts.Expression {
  while (ts.isAsExpression(expr) || ts.isSatisfiesExpression(expr) || ts.isParenthesizedExpression(expr) || ts.isTypeAssertionExpression(expr)) expr = expr.expression
  return expr
}

function literal (expr: ts.Expression): string | undefined {
  expr = unwrap(expr)
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr) || ts.isNumericLiteral(expr)) return expr.text
  return undefined
}

/** The `const name = …` initializer of `file`, or of the file it imports `name` from. */
function constInitializer (file: ts.SourceFile, name: string, depth = 0): { file: ts.SourceFile, expr: ts.Expression } | undefined {
  let found: { file: ts.SourceFile, expr: ts.Expression } | undefined
  const visit = (node: ts.Node): void => {
    if (found !== undefined) return
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === name && node.initializer !== undefined &&
        ts.isVariableDeclarationList(node.parent) && (node.parent.flags & ts.NodeFlags.Const) !== 0) {
      found = { file, expr: node.initializer }
      return
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  if (found !== undefined || depth > 3) return found
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
    const bindings = statement.importClause?.namedBindings
    if (bindings === undefined || !ts.isNamedImports(bindings)) continue
    const element = bindings.elements.find(e => e.name.text === name)
    if (element === undefined || !statement.moduleSpecifier.text.startsWith('.')) continue
    const target = resolve(dirname(file.fileName), statement.moduleSpecifier.text.replace(/\.js$/, '.ts'))
    if (existsSync(target)) return constInitializer(source(target), element.propertyName?.text ?? name, depth + 1)
  }
  return undefined
}

/** The elements of an array expression, or undefined when it is not a literal we can read. */
function arrayValues (file: ts.SourceFile, expr: ts.Expression): Value[] | undefined {
  expr = unwrap(expr)
  if (ts.isIdentifier(expr)) {
    const init = constInitializer(file, expr.text)
    return init === undefined ? undefined : arrayValues(init.file, init.expr)
  }
  if (!ts.isArrayLiteralExpression(expr)) return undefined
  const values: Value[] = []
  for (const element of expr.elements) {
    if (ts.isSpreadElement(element)) {
      const spread = arrayValues(file, element.expression)
      if (spread === undefined) return undefined
      values.push(...spread)
      continue
    }
    const inner = unwrap(element)
    if (ts.isArrayLiteralExpression(inner)) values.push(inner.elements.map(e => ts.isSpreadElement(e) ? undefined : literal(e)))
    else if (ts.isObjectLiteralExpression(inner)) {
      const record: Record<string, string | undefined> = {}
      for (const p of inner.properties) if (ts.isPropertyAssignment(p) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) record[p.name.text] = literal(p.initializer)
      values.push(record)
    } else values.push(literal(inner))
  }
  return values
}

/** The rows a `for (const <binding> of <expr>)` loop binds, or undefined if the array is unknown. */
function loopRows (file: ts.SourceFile, loop: ts.ForOfStatement): Row[] | undefined {
  const list = loop.initializer
  if (!ts.isVariableDeclarationList(list) || list.declarations.length !== 1) return undefined
  const binding = list.declarations[0].name
  const values = arrayValues(file, loop.expression)
  if (values === undefined) return undefined
  return values.map(value => {
    const row = new Map<string, string>()
    if (ts.isIdentifier(binding)) {
      if (typeof value === 'string') row.set(binding.text, value)
    } else if (ts.isArrayBindingPattern(binding) && Array.isArray(value)) {
      binding.elements.forEach((e, i) => {
        const v = (value as readonly (string | undefined)[])[i]
        if (ts.isBindingElement(e) && ts.isIdentifier(e.name) && v !== undefined) row.set(e.name.text, v)
      })
    } else if (ts.isObjectBindingPattern(binding) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const e of binding.elements) {
        if (!ts.isIdentifier(e.name)) continue
        const key = e.propertyName !== undefined && ts.isIdentifier(e.propertyName) ? e.propertyName.text : e.name.text
        const v = (value as Readonly<Record<string, string | undefined>>)[key]
        if (v !== undefined) row.set(e.name.text, v)
      }
    }
    return row
  })
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Expands a template name over the rows of the loops that bind its placeholders. */
function expand (file: ts.SourceFile, name: ts.TemplateExpression, loops: ReadonlyArray<Row[] | undefined>): Array<{ text: string, pattern: string }> {
  let results = [{ text: name.head.text, pattern: escape(name.head.text), row: new Map<string, string>() as Map<string, string>, used: new Set<number>() }]
  for (const span of name.templateSpans) {
    const expr = unwrap(span.expression)
    const next: typeof results = []
    for (const r of results) {
      const known = ts.isIdentifier(expr) ? r.row.get(expr.text) : undefined
      if (known !== undefined) {
        next.push({ ...r, text: r.text + known + span.literal.text, pattern: r.pattern + escape(known) + escape(span.literal.text) })
        continue
      }
      // the innermost loop that binds this identifier, not yet used for this name
      let index = -1
      if (ts.isIdentifier(expr)) for (let i = loops.length - 1; i >= 0 && index < 0; i--) if (loops[i]?.some(row => row.has(expr.text)) === true) index = i
      const rows = index >= 0 && !r.used.has(index) ? loops[index] : undefined
      if (rows === undefined || !ts.isIdentifier(expr)) {
        const raw = `\${${span.expression.getText(file)}}`
        next.push({ ...r, text: r.text + raw + span.literal.text, pattern: r.pattern + '[^/]*' + escape(span.literal.text) })
        continue
      }
      for (const row of rows) {
        const value = row.get(expr.text)
        if (value === undefined) continue
        const merged = new Map([...r.row, ...row])
        next.push({ text: r.text + value + span.literal.text, pattern: r.pattern + escape(value) + escape(span.literal.text), row: merged, used: new Set([...r.used, index]) })
      }
    }
    results = next
  }
  return results.map(({ text, pattern }) => ({ text, pattern }))
}

function namesIn (path: string, testDir: string): TestName[] {
  const file = source(path)
  const out: TestName[] = []
  const loops: Array<Row[] | undefined> = []
  const add = (node: ts.Node, text: string, pattern: string): void => {
    const re = new RegExp(`^${pattern}$`)
    out.push({ file: relative(testDir, path), line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, text, matches: id => re.test(id) })
  }
  const visit = (node: ts.Node): void => {
    if (ts.isForOfStatement(node)) {
      loops.push(loopRows(file, node))
      ts.forEachChild(node, visit)
      loops.pop()
      return
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'test' &&
        ts.isIdentifier(node.expression.expression) && /^t/.test(node.expression.expression.text) && node.arguments.length >= 2) {
      const arg = unwrap(node.arguments[0])
      if (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) add(node, arg.text, escape(arg.text))
      else if (ts.isTemplateExpression(arg)) for (const { text, pattern } of expand(file, arg, loops)) add(node, text, pattern)
      else add(node, `\${${arg.getText(file)}}`, '[^/]*')
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return out
}

/** Every test name registered by `testDir/**\/*.test.ts`, in file order. */
export function testNames (testDir: string): TestName[] {
  const files: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) { if (entry.name !== 'fixtures' && entry.name !== 'node_modules') walk(path) } else if (entry.name.endsWith('.test.ts')) files.push(path)
    }
  }
  walk(testDir)
  return files.sort().flatMap(path => namesIn(path, testDir))
}
