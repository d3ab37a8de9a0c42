/** TypeScript projects of an app team over the packed SDK: the code blocks of its docs, and WebSockets of each platform. */
import { execFile } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');

/** The documents whose TypeScript blocks must compile against the package. */
export const DOCUMENTS = ['client-sdk/README.md', 'docs/client-sdk.md'];

/** Every ```ts and ```tsx block of a Markdown file, with the line it starts on. */
export async function codeBlocks(file: string): Promise<{ line: number; lang: 'ts' | 'tsx'; code: string }[]> {
  const lines = (await readFile(path.join(root, file), 'utf8')).split('\n');
  const blocks: { line: number; lang: 'ts' | 'tsx'; code: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(tsx?)\s*$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    blocks.push({ line: i + 1, lang: open[1] as 'ts' | 'tsx', code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/**
 * What the examples take from the app around them, and the other packages they name (declared
 * loosely: only the SDK's side is checked). A block declares its own `client` where it makes one.
 */
const APP_CONTEXT = `import type { TourlineClient } from '@tourline/client';
declare global {
  const client: TourlineClient;
  const auth: { accessToken(options: { forceRefresh: boolean }): Promise<string> };
  const tourId: string, deliveryId: string, itemId: string, lineId: string, paymentMethodId: string;
  const customerSignature: Uint8Array, driverSignature: Uint8Array, jpegBytes: Uint8Array;
  function render(...args: unknown[]): void;
  function rerender(...args: unknown[]): void;
  function banner(...args: unknown[]): void;
  function toast(...args: unknown[]): void;
  function show(...args: unknown[]): void;
  function it(name: string, run: () => unknown): void;
  function openMyStore(): Promise<any>;
  function App(): null;
}
export {};
`;
const OTHER_PACKAGES = ['expo-sqlite', 'expo-file-system', '@op-engineering/op-sqlite', 'react-native', '@react-native-community/netinfo']
  .map((name) => `declare module '${name}';`)
  .join('\n');

const strict = {
  strict: true,
  skipLibCheck: false,
  noEmit: true,
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
};

/**
 * React Native's WebSocket as its types declare it (DefinitelyTyped's react-native globals):
 * a class of another name, since the browser's is in the same program.
 */
const REACT_NATIVE_WEBSOCKET = `interface RNMessageEvent extends Event { data?: any }
interface RNErrorEvent extends Event { message: string }
interface RNCloseEvent extends Event { code?: number; reason?: string; message?: string }
declare class ReactNativeWebSocket extends EventTarget {
  constructor(uri: string, protocols?: string | string[] | null, options?: { headers: { [name: string]: string }; [option: string]: any } | null);
  readonly readyState: number;
  send(data: string | ArrayBuffer | ArrayBufferView | Blob): void;
  close(code?: number, reason?: string): void;
  ping(): void;
  onopen: (() => void) | null;
  onmessage: ((event: RNMessageEvent) => void) | null;
  onerror: ((event: RNErrorEvent) => void) | null;
  onclose: ((event: RNCloseEvent) => void) | null;
}
`;

/** Writes a project of `files` with its tsconfig under `dir` and compiles it; answers tsc's complaints. */
async function compile(dir: string, files: Record<string, string>, options: Record<string, unknown> = {}): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  await writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { ...strict, ...options }, include: ['*.ts', '*.tsx'] }),
  );
  try {
    await run(process.execPath, [tsc, '-p', dir], { cwd: dir });
    return '';
  } catch (error) {
    return (error as { stdout?: string }).stdout || String(error);
  }
}

/**
 * Only the tarball and TypeScript: no zod, no @types at all. The core entry points, the
 * browser's WebSocket and React Native's as WebSocketLike, without a cast.
 */
export function compileBare(app: string) {
  return compile(
    path.join(app, 'bare'),
    {
      'app.ts': `import { TourlineClient, RefusalError, type WebSocketFactory, type Refusal } from '@tourline/client';
import { IndexedDbStore } from '@tourline/client/indexeddb';
import { SqliteStore } from '@tourline/client/sqlite';
import { keyValueStoreContract } from '@tourline/client/contract';
export const browser: WebSocketFactory = (url, protocols) => new WebSocket(url, protocols);
export const reactNative: WebSocketFactory = (url, protocols) => new ReactNativeWebSocket(url, protocols);
export const uses = [TourlineClient.open, RefusalError, IndexedDbStore.open, SqliteStore.open, keyValueStoreContract];
export const verdict = (r: Refusal | null): string => r?.code ?? 'accepted';
`,
      'reactNative.d.ts': REACT_NATIVE_WEBSOCKET,
    },
    { types: [] },
  );
}

/** Links packages of the repository's own node_modules into the app, as an app team would install them. */
async function linkPackages(app: string, names: string[]) {
  for (const name of names) {
    const target = path.join(app, 'node_modules', name);
    await mkdir(path.dirname(target), { recursive: true });
    await symlink(path.join(root, 'node_modules', name), target).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
  }
}

/** With Node's, ws's and React's types installed: the node and react entry points, ws as WebSocketLike, and every doc block. */
export async function compileWithPlatforms(app: string) {
  await linkPackages(app, ['@types/node', 'ws', '@types/ws', 'react', '@types/react']);
  const files: Record<string, string> = {
    'context.d.ts': APP_CONTEXT,
    'packages.d.ts': OTHER_PACKAGES,
    'node.ts': `import WebSocket from 'ws';
import { TourlineClient, type WebSocketFactory } from '@tourline/client';
import { FileStore } from '@tourline/client/node';
import { useTour } from '@tourline/client/react';
export const node20: WebSocketFactory = (url, protocols) => new WebSocket(url, protocols);
export const open = async () => TourlineClient.open({ baseUrl: 'http://localhost:3000', getToken: () => 'token', storage: await FileStore.open('./data'), webSocket: node20 });
export { useTour };
`,
  };
  for (const doc of DOCUMENTS) {
    for (const block of await codeBlocks(doc)) {
      const name = `${doc.replace(/[/.]/g, '_')}_line${block.line}.${block.lang}`;
      files[name] = `${block.code}\nexport {};\n`;
    }
  }
  // Other packages are declared as `any`: their callbacks' parameters would be implicit anys. What the SDK types stays checked.
  return compile(path.join(app, 'platforms'), files, { jsx: 'react-jsx', lib: ['ES2023', 'DOM'], noImplicitAny: false });
}
