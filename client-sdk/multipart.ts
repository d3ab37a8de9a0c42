/**
 * Multipart bodies differ by platform: browsers and Node send Blobs, React Native sends files
 * by `{ uri, name, type }` and cannot make a Blob from bytes. The SDK describes the parts; a
 * body builder (chosen by platform, or passed by the app) turns them into what its fetch sends.
 */

/** A file's data as the platform holds it: bytes (Node), a Blob (web), or a file URI (React Native). */
export type FileData = Uint8Array | Blob | { uri: string };

export type MultipartPart = { name: string; value: string } | { name: string; fileName: string; contentType: string; data: FileData };

/** Turns parts into a fetch body; the content type with its boundary is left to fetch. */
export type MultipartBuilder = (parts: MultipartPart[]) => unknown;

interface FormDataLike {
  append(name: string, value: unknown, fileName?: string): void;
}
type FormDataCtor = new () => FormDataLike;

function formData(): FormDataLike {
  const Ctor = (globalThis as { FormData?: FormDataCtor }).FormData;
  if (!Ctor) throw new Error('this platform has no FormData; pass options.multipart');
  return new Ctor();
}

const isUri = (data: FileData): data is { uri: string } => typeof (data as { uri?: unknown }).uri === 'string';

/** Browsers and Node: Blobs in a FormData (`append`, which every FormData has). */
export const blobMultipart: MultipartBuilder = (parts) => {
  const form = formData();
  for (const part of parts) {
    if (!('data' in part)) {
      form.append(part.name, part.value);
      continue;
    }
    if (isUri(part.data)) throw new Error('a file URI needs the React Native body builder');
    // A Blob of another type is wrapped, not read: the part's content type is what the service checks.
    const blob =
      part.data instanceof Uint8Array || part.data.type !== part.contentType
        ? new Blob([part.data as Uint8Array<ArrayBuffer> | Blob], { type: part.contentType })
        : part.data;
    form.append(part.name, blob, part.fileName);
  }
  return form;
};

/** React Native: files as `{ uri, name, type }`, which its FormData streams from disk. */
export const reactNativeMultipart: MultipartBuilder = (parts) => {
  const form = formData();
  for (const part of parts) {
    if (!('data' in part)) form.append(part.name, part.value);
    else if (isUri(part.data)) form.append(part.name, { uri: part.data.uri, name: part.fileName, type: part.contentType });
    else throw new Error('React Native sends files by URI: keep attachments in a store that answers { uri }');
  }
  return form;
};

export function detectMultipart(): MultipartBuilder {
  const product = (globalThis as { navigator?: { product?: string } }).navigator?.product;
  return product === 'ReactNative' ? reactNativeMultipart : blobMultipart;
}
