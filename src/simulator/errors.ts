/**
 * The service's error envelope: `{error: {code, message, fields?}}` with Japanese messages; `fields` only for
 * `validation_error`.
 */

export type ErrorCode =
  'invalid_request' | 'validation_error' | 'unauthorized' | 'forbidden' | 'not_found' | 'rate_limited' | 'internal_error';

export type FieldErrorCode = 'required' | 'invalid_type' | 'invalid_value' | 'not_found' | 'unknown_property' | 'too_long' | 'out_of_range';

export interface FieldError {
  name: string;
  code: FieldErrorCode;
  message: string;
}

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; fields?: FieldError[] };
}

export const MESSAGES: Record<ErrorCode, string> = {
  invalid_request: 'リクエストが不正です。',
  validation_error: '入力内容に誤りがあります。',
  unauthorized: '認証に失敗しました。APIキーを確認してください。',
  forbidden: 'この操作を行う権限がありません。',
  not_found: '指定されたリソースが見つかりません。',
  rate_limited: 'リクエスト数が上限を超えました。しばらく待ってから再試行してください。',
  internal_error: 'サーバー内部でエラーが発生しました。',
};

export const FIELD_MESSAGES: Record<FieldErrorCode, string> = {
  required: '必須項目です。',
  invalid_type: '値の型が正しくありません。',
  invalid_value: '値が正しくありません。',
  not_found: '指定されたレコードが存在しません。',
  unknown_property: '存在しない項目です。',
  too_long: '値が長すぎます。',
  out_of_range: '値が範囲外です。',
};

export function fieldError(name: string, code: FieldErrorCode, message?: string): FieldError {
  return { name, code, message: message ?? FIELD_MESSAGES[code] };
}

/** Thrown by the service logic; the HTTP layers turn it into the envelope. */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message?: string,
    readonly fields?: FieldError[],
    /** Extra response headers (e.g. `Allow` on 405). */
    readonly headers?: Record<string, string>,
  ) {
    super(message ?? MESSAGES[code]);
    this.name = 'ServiceError';
  }

  envelope(): ErrorEnvelope {
    const error: ErrorEnvelope['error'] = { code: this.code, message: this.message };
    if (this.code === 'validation_error') error.fields = this.fields ?? [];
    return { error };
  }
}

export function validationError(fields: FieldError[]): ServiceError {
  return new ServiceError(400, 'validation_error', undefined, fields);
}

export function notFound(message?: string): ServiceError {
  return new ServiceError(404, 'not_found', message);
}

export function invalidRequest(message?: string): ServiceError {
  return new ServiceError(400, 'invalid_request', message);
}
