// Rewrites the emitted declarations so that none needs zod: zod is a peer for the schemas'
// runtime checks, which the SDK never runs, and a TypeScript app need not install it. Each type
// written with zod (`z.infer<typeof Tour>`, `z.output<...>`) becomes the plain type it stands
// for, the schema constants (values the package never exports) go, and so does the import.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';

const FLAGS = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType;

/** True for a type written with zod's namespace: `z.Something<...>`. */
const isZodType = (node) => ts.isTypeReferenceNode(node) && ts.isQualifiedName(node.typeName) && node.typeName.left.getText() === 'z';
const importsZod = (statement) => ts.isImportDeclaration(statement) && statement.moduleSpecifier.text === 'zod';
/** Whether a zod type is written anywhere under the node. */
const mentionsZod = (node) => isZodType(node) || ts.forEachChild(node, mentionsZod) === true;
/** A value (a schema, a function making one) or a generic helper over schemas (`Out<typeof S.Tour>`): it goes. */
const goes = (statement) =>
  importsZod(statement) ||
  ((ts.isVariableStatement(statement) || ts.isFunctionDeclaration(statement)) && mentionsZod(statement)) ||
  (ts.isTypeAliasDeclaration(statement) && statement.typeParameters?.length > 0 && mentionsZod(statement));

/** Rewrites every declaration file under `dir` that imports zod; answers the files changed. */
export async function plainTypes(dir, files) {
  const program = ts.createProgram(files, { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext });
  const checker = program.getTypeChecker();
  const changed = [];
  for (const source of program.getSourceFiles()) {
    if (!path.resolve(source.fileName).startsWith(dir) || !source.statements.some(importsZod)) continue;
    const edits = [];
    const helpers = new Set(source.statements.filter((s) => ts.isTypeAliasDeclaration(s) && goes(s)).map((s) => s.name.text));
    const usesHelper = (node) => ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName) && helpers.has(node.typeName.text);
    const visit = (node) => {
      if (isZodType(node) || usesHelper(node)) {
        edits.push([node.getStart(source), node.getEnd(), checker.typeToString(checker.getTypeFromTypeNode(node), undefined, FLAGS)]);
        return;
      }
      ts.forEachChild(node, visit);
    };
    for (const statement of source.statements) {
      if (goes(statement)) edits.push([statement.getFullStart(), statement.getEnd(), '']);
      else if (ts.isTypeAliasDeclaration(statement) && mentionsZod(statement.type)) {
        // The alias as a whole: a mapped type over schemas resolves only there.
        const type = checker.getTypeAtLocation(statement.name);
        edits.push([
          statement.type.getStart(source),
          statement.type.getEnd(),
          checker.typeToString(type, statement, FLAGS | ts.TypeFormatFlags.InTypeAlias),
        ]);
      } else visit(statement);
    }
    let text = source.getFullText();
    for (const [start, end, replacement] of edits.sort((a, b) => b[0] - a[0])) text = text.slice(0, start) + replacement + text.slice(end);
    await writeFile(source.fileName, withoutUnusedImports(text));
    changed.push(source.fileName);
  }
  return changed;
}

/** Drops the names of imports that the rewritten file no longer uses (schema constants among them). */
function withoutUnusedImports(text) {
  const source = ts.createSourceFile('x.d.ts', text, ts.ScriptTarget.Latest, true);
  const edits = [];
  for (const statement of source.statements) {
    const named = ts.isImportDeclaration(statement) ? statement.importClause?.namedBindings : undefined;
    if (!named) continue;
    const rest = text.slice(0, statement.getFullStart()) + text.slice(statement.getEnd());
    if (ts.isNamespaceImport(named)) {
      if (!new RegExp(`\\b${named.name.text}\\b`).test(rest)) edits.push([statement.getStart(source), statement.getEnd(), '']);
      continue;
    }
    const used = named.elements.filter((e) => new RegExp(`\\b${e.name.text}\\b`).test(rest));
    if (used.length === named.elements.length) continue;
    const replacement = used.length
      ? `import type { ${used.map((e) => e.getText(source).replace(/^type /, '')).join(', ')} } from ${statement.moduleSpecifier.getText(source)};`
      : '';
    edits.push([statement.getStart(source), statement.getEnd(), replacement]);
  }
  for (const [start, end, replacement] of edits.reverse()) text = text.slice(0, start) + replacement + text.slice(end);
  return text;
}
