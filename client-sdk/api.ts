import type { z } from 'zod';
import type * as S from '../shared/index.js';
import { detectMultipart, type FileData, type MultipartBuilder, type MultipartPart } from './multipart.js';
import { NetworkError, ProblemError, parseRetryAfter } from './problem.js';
import { clearTimer } from './timers.js';
import { CLIENT_HEADER } from '../shared/rules/clientVersion.js';
import { SDK_CLIENT_NAME } from './version.js';

type Out<T extends z.ZodType> = z.output<T>;
type In<T extends z.ZodType> = z.input<T>;

export type GetToken = (options: { forceRefresh: boolean }) => Promise<string> | string;
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  baseUrl: string;
  /** Called with `forceRefresh: true` after a 401; the request is then repeated once. */
  getToken?: GetToken;
  /** Defaults to globalThis.fetch. */
  fetch?: FetchLike;
  timeoutMs?: number;
  now?: () => number;
  /** Extra headers for every request (for example the admin key). */
  headers?: Record<string, string>;
  /** Builds multipart bodies; default by platform (React Native: file URIs; elsewhere: Blobs). */
  multipart?: MultipartBuilder;
}

export interface RequestSpec {
  query?: Record<string, string | number | boolean | undefined | null>;
  json?: unknown;
  multipart?: MultipartPart[];
  /** 'bytes' answers a Uint8Array and its content type. */
  accept?: 'json' | 'bytes' | 'text';
  bearer?: boolean;
}

/** Bytes of an image, a Blob where the platform has one, or a file URI (React Native). */
export type Binary = FileData;

export interface NoteImageUpload {
  file: Binary;
  contentType?: string;
  fileName?: string;
  /** Extra form fields sent beside the file (for example a client note id). */
  fields?: Record<string, string>;
}

export interface CompletionUpload {
  customerSignature: Binary;
  driverSignature: Binary;
  acknowledgements: In<typeof S.CompleteDeliveryAcknowledgements>;
}

/** The query string, built by hand: React Native's URL has no working `searchParams`. */
export function queryString(query: RequestSpec['query'] = {}): string {
  const pairs = Object.entries(query)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return pairs.length ? `?${pairs.join('&')}` : '';
}

/** `baseUrl` and a path joined without `URL`, which Hermes lacks and React Native only partly has. */
export const joinUrl = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;

/** HTTP with bearer tokens, problem+json errors, timeouts, and one shared token refresh on 401. */
export class Transport {
  private readonly fetch: FetchLike;
  private readonly multipart: MultipartBuilder;
  private token: string | undefined;
  private refreshing: Promise<string> | undefined;

  constructor(readonly options: TransportOptions) {
    const f = options.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!f) throw new Error('no fetch available; pass options.fetch');
    this.fetch = f;
    this.multipart = options.multipart ?? detectMultipart();
  }

  /** A 401 after a fresh token throws ProblemError 401: the driver must sign in again. */
  async request<T>(method: string, path: string, spec: RequestSpec = {}): Promise<T> {
    const bearer = (spec.bearer ?? true) && !!this.options.getToken;
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    const token = bearer ? await this.currentToken() : undefined;
    return this.withTimeout(timeoutMs, `${method} ${path}`, async (signal) => {
      let response = await this.send(method, path, spec, token, signal);
      if (response.status === 401 && bearer) {
        await response.body?.cancel().catch(() => undefined);
        response = await this.send(method, path, spec, await this.refreshedToken(token), signal);
      }
      return this.read<T>(response, spec.accept ?? 'json');
    });
  }

  private async currentToken() {
    if (this.token === undefined) this.token = await (this.refreshing ?? this.options.getToken!({ forceRefresh: false }));
    return this.token;
  }

  /** Requests that failed with the same token share one refresh; one that used an older token takes the current one. */
  private async refreshedToken(used: string | undefined): Promise<string> {
    if (this.token !== undefined && this.token !== used) return this.token;
    this.refreshing ??= Promise.resolve(this.options.getToken!({ forceRefresh: true }))
      .then((token) => {
        this.token = token;
        return token;
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  /** AbortController and setTimeout, which every platform has (AbortSignal's own timeout helper is not everywhere). */
  private async withTimeout<T>(timeoutMs: number, what: string, work: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const controller = typeof AbortController === 'undefined' ? undefined : new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller?.abort();
        reject(new NetworkError(`${what}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([work(controller?.signal), timeout]);
    } finally {
      clearTimer(timer);
    }
  }

  private async send(
    method: string,
    path: string,
    spec: RequestSpec,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    const url = joinUrl(this.options.baseUrl, path) + queryString(spec.query);
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json, */*',
      [CLIENT_HEADER]: SDK_CLIENT_NAME,
      ...this.options.headers,
    };
    if (token) headers.authorization = `Bearer ${token}`;
    let body: BodyInit | undefined;
    if (spec.multipart) body = this.multipart(spec.multipart) as BodyInit;
    else if (spec.json !== undefined) {
      body = JSON.stringify(spec.json);
      headers['content-type'] = 'application/json';
    }
    try {
      return await this.fetch(url, { method, headers, body, signal });
    } catch (error) {
      throw new NetworkError(`${method} ${path}: ${(error as Error)?.message ?? String(error)}`, error);
    }
  }

  private async read<T>(response: Response, accept: 'json' | 'bytes' | 'text'): Promise<T> {
    const type = response.headers.get('content-type') ?? '';
    let text: string | undefined;
    if (!response.ok) {
      try {
        text = await response.text();
      } catch (error) {
        throw new NetworkError('answer lost while reading', error);
      }
      let problem: Record<string, unknown>;
      try {
        problem = JSON.parse(text);
      } catch {
        problem = { detail: text.slice(0, 500) || undefined };
      }
      const now = this.options.now?.() ?? Date.now();
      throw new ProblemError(
        response.status,
        problem as never,
        parseRetryAfter(response.headers.get('retry-after'), now),
        type.includes('problem+json'),
      );
    }
    try {
      if (response.status === 204) return undefined as T;
      if (accept === 'bytes') return { bytes: new Uint8Array(await response.arrayBuffer()), contentType: type } as T;
      text = await response.text();
    } catch (error) {
      throw new NetworkError('answer lost while reading', error);
    }
    if (accept === 'text') return text as T;
    // Anything but JSON here is not the service talking; taking it for an answer would lose the request.
    if (!type.includes('json'))
      throw new NetworkError(`not an answer of the service: ${response.status} ${type || 'without a content type'}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

const enc = encodeURIComponent;

/** The driver-facing endpoints of the service, typed from the shared schemas. */
export class TourlineApi {
  readonly transport: Transport;

  constructor(options: TransportOptions | Transport) {
    this.transport = options instanceof Transport ? options : new Transport(options);
  }

  private call<T>(method: string, path: string, spec?: RequestSpec) {
    return this.transport.request<T>(method, path, spec);
  }

  health() {
    return this.call<string>('GET', '/health', { bearer: false, accept: 'text' });
  }
  account(personalnummer: number) {
    return this.call<Out<typeof S.Account>>('GET', `/accounts/${personalnummer}`);
  }

  cars(query: { includeInactive?: boolean } = {}) {
    return this.call<Out<typeof S.CarsList>>('GET', '/me/cars', { query });
  }
  createCar(body: In<typeof S.CreateCarRequest>) {
    return this.call<Out<typeof S.CarResponse>>('POST', '/me/cars', { json: body });
  }
  updateCar(carId: string, body: In<typeof S.UpdateCarRequest>) {
    return this.call<Out<typeof S.CarResponse>>('PATCH', `/me/cars/${enc(carId)}`, { json: body });
  }

  tours(query: { date?: string } = {}) {
    return this.call<Out<typeof S.TourSummaryList>>('GET', '/me/tours', { query });
  }
  tour(tourId: string) {
    return this.call<Out<typeof S.TourDetails>>('GET', `/tours/${enc(tourId)}`);
  }
  setDeliveryOrder(tourId: string, body: In<typeof S.SetDeliveryOrderRequest>) {
    return this.call<Out<typeof S.SetDeliveryOrderResponse>>('PUT', `/tours/${enc(tourId)}/delivery-order`, { json: body });
  }
  syncTour(body: In<typeof S.SyncTourRequest>) {
    return this.call<Out<typeof S.SyncTourResponse>>('POST', '/sync/tour', { json: body });
  }

  applyScans(body: In<typeof S.ApplyScansRequest>) {
    return this.call<Out<typeof S.ApplyScansResponse>>('POST', '/scans', { json: body });
  }
  assignCar(deliveryId: string, body: In<typeof S.AssignCarRequest>) {
    return this.lifecycle('PUT', deliveryId, 'assigned-car', body);
  }
  hold(deliveryId: string, body: In<typeof S.HoldDeliveryRequest>) {
    return this.lifecycle('POST', deliveryId, 'hold', body);
  }
  resume(deliveryId: string) {
    return this.lifecycle('POST', deliveryId, 'resume', undefined);
  }
  cancel(deliveryId: string, body: In<typeof S.CancelDeliveryRequest>) {
    return this.lifecycle('POST', deliveryId, 'cancel', body);
  }

  complete(deliveryId: string, upload: CompletionUpload) {
    const multipart: MultipartPart[] = [
      { name: 'customer_signature', fileName: 'customer_signature.png', contentType: 'image/png', data: upload.customerSignature },
      { name: 'driver_signature', fileName: 'driver_signature.png', contentType: 'image/png', data: upload.driverSignature },
      { name: 'acknowledgements', value: JSON.stringify(upload.acknowledgements) },
    ];
    return this.call<Out<typeof S.DeliveryResponse>>('POST', `/deliveries/${enc(deliveryId)}/complete`, { multipart });
  }

  credit(deliveryId: string, body: In<typeof S.DeliveryCreditEventRequest>) {
    return this.call<Out<typeof S.DeliveryCreditResponse>>('POST', `/deliveries/${enc(deliveryId)}/credit`, { json: body });
  }
  payment(deliveryId: string, body: In<typeof S.RecordDeliveryPaymentRequest>) {
    return this.call<Out<typeof S.DeliveryPaymentResponse>>('POST', `/deliveries/${enc(deliveryId)}/payment`, { json: body });
  }

  createNote(deliveryId: string, body: In<typeof S.CreateDeliveryNoteRequest>) {
    return this.call<Out<typeof S.DeliveryNoteResponse>>('POST', `/deliveries/${enc(deliveryId)}/notes`, { json: body });
  }
  uploadNoteImage(deliveryId: string, upload: NoteImageUpload) {
    const type = upload.contentType ?? 'image/jpeg';
    const multipart: MultipartPart[] = Object.entries(upload.fields ?? {}).map(([name, value]) => ({ name, value }));
    multipart.push({
      name: 'file',
      fileName: upload.fileName ?? `note.${type.split('/')[1] ?? 'bin'}`,
      contentType: type,
      data: upload.file,
    });
    return this.call<Out<typeof S.DeliveryNoteResponse>>('POST', `/deliveries/${enc(deliveryId)}/notes/image`, { multipart });
  }
  updateNote(deliveryId: string, noteId: string, body: In<typeof S.UpdateDeliveryNoteRequest>) {
    return this.call<Out<typeof S.DeliveryNoteResponse>>('PATCH', `/deliveries/${enc(deliveryId)}/notes/${enc(noteId)}`, { json: body });
  }
  deleteNote(deliveryId: string, noteId: string) {
    return this.call<void>('DELETE', `/deliveries/${enc(deliveryId)}/notes/${enc(noteId)}`);
  }

  setService(deliveryId: string, serviceId: string, body: In<typeof S.SetDeliveryServiceRequest>) {
    return this.call<Out<typeof S.DeliveryServiceResponse>>('PUT', `/deliveries/${enc(deliveryId)}/services/${enc(serviceId)}`, {
      json: body,
    });
  }
  clearService(deliveryId: string, serviceId: string) {
    return this.call<void>('DELETE', `/deliveries/${enc(deliveryId)}/services/${enc(serviceId)}`);
  }

  attachment(
    id: string,
    query: { w?: number; h?: number; q?: number; ext?: 'png' | 'jpeg' | 'jpg' | 'webp' | 'tiff'; page?: number | string } = {},
  ) {
    return this.call<{ bytes: Uint8Array; contentType: string }>('GET', `/attachments/${enc(id)}`, { query, accept: 'bytes' });
  }

  paymentMethods(query: { includeInactive?: boolean } = {}) {
    return this.call<Out<typeof S.PaymentMethodsList>>('GET', '/payment-methods', { query });
  }
  createPaymentMethod(body: In<typeof S.CreatePaymentMethodRequest>) {
    return this.call<Out<typeof S.PaymentMethodResponse>>('POST', '/payment-methods', { json: body });
  }
  updatePaymentMethod(id: string, body: In<typeof S.UpdatePaymentMethodRequest>) {
    return this.call<Out<typeof S.PaymentMethodResponse>>('PATCH', `/payment-methods/${enc(id)}`, { json: body });
  }
  deletePaymentMethod(id: string) {
    return this.call<void>('DELETE', `/payment-methods/${enc(id)}`);
  }

  services(query: { includeInactive?: boolean } = {}) {
    return this.call<Out<typeof S.ServicesList>>('GET', '/services', { query });
  }
  createService(body: In<typeof S.CreateServiceRequest>) {
    return this.call<Out<typeof S.ServiceResponse>>('POST', '/services', { json: body });
  }
  updateService(id: string, body: In<typeof S.UpdateServiceRequest>) {
    return this.call<Out<typeof S.ServiceResponse>>('PATCH', `/services/${enc(id)}`, { json: body });
  }
  deleteService(id: string) {
    return this.call<void>('DELETE', `/services/${enc(id)}`);
  }

  push(body: In<typeof S.PushRequest>) {
    return this.call<Out<typeof S.PushResponse>>('POST', '/sync/push', { json: body });
  }
  /** This device's sync health, as a small request of its own (docs/client-sdk.md, "Sync health"). */
  reportDevice(report: In<typeof S.DeviceReport>) {
    return this.call<void>('POST', '/sync/device', { json: report });
  }
  /** The cursor of "now" (not in the interface spec; the service offers it for a fresh start). */
  cursor() {
    return this.call<{ cursor: string }>('GET', '/sync/cursor');
  }
  changes(query: { since?: string | null; limit?: number } = {}) {
    return this.call<Out<typeof S.ChangesResponse>>('GET', '/sync/changes', { query });
  }

  private lifecycle(method: string, deliveryId: string, action: string, body: unknown) {
    return this.call<Out<typeof S.DeliveryResponse>>(method, `/deliveries/${enc(deliveryId)}/${action}`, { json: body });
  }
}

/** The back-office endpoints, authenticated with the machine key (`X-Admin-Api-Key`). */
export class AdminApi {
  readonly transport: Transport;

  constructor(options: Omit<TransportOptions, 'getToken'> & { adminKey: string }) {
    this.transport = new Transport({ ...options, headers: { ...options.headers, 'x-admin-api-key': options.adminKey } });
  }

  private call<T>(method: string, path: string, spec: RequestSpec = {}) {
    return this.transport.request<T>(method, path, { bearer: false, ...spec });
  }

  beleg<T = unknown>(belegnummer: string) {
    return this.call<T>('GET', `/admin/belege/${enc(belegnummer)}`);
  }
  positionsModified<T = unknown>(belegnummer: string) {
    return this.call<T>('GET', `/admin/belege/${enc(belegnummer)}/positions-modified`);
  }
  /** Dates are `DD-MM-YYYY`, as the spec says for the admin queries. */
  completedDeliveries(query: { day?: string; from?: string; to?: string } = {}) {
    return this.call<{
      count: number;
      deliveries: { belegnummer: string; positions_modified: boolean }[];
      from: string | null;
      to: string | null;
    }>('GET', '/admin/completed-deliveries', { query });
  }
  deliveredBelegnummern<T = unknown>(query: { day?: string } = {}) {
    return this.call<T>('GET', '/admin/delivered-belegnummern', { query });
  }
  importErp<T = unknown>(query: { date?: string } = {}) {
    return this.call<T>('POST', '/admin/import-erp', { query });
  }
  markMailSent<T = unknown>(belegnummern: string[]) {
    return this.call<T>('POST', '/admin/mark-mail-sent', { json: { belegnummern } });
  }
  pushCompletion(deliveryId: string) {
    return this.call<void>('POST', '/admin/push-completion', { query: { delivery_id: deliveryId } });
  }
  reviews<T = unknown[]>() {
    return this.call<T>('GET', '/admin/reviews');
  }
  resolveReview(deliveryId: string, processor: string) {
    return this.call<void>('POST', `/admin/reviews/${enc(deliveryId)}/resolve`, { json: { processor } });
  }
}
