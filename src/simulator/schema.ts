import type { PropertyDefinition, PropertyOption, RecordResource } from './types.js';
import { RECORD_RESOURCES } from './types.js';

/**
 * Property definitions of every record resource: core fields, the organization's custom properties, and what the
 * simulator needs to know beyond the public definition (links, read-only aggregates and predicted values).
 */

/** Types the spec names, plus `multi_select` (a `;`-joined string of option values) which it does not. */
export type PropertyType = 'text' | 'number' | 'date' | 'datetime' | 'boolean' | 'select' | 'multi_select';

export const PROPERTY_TYPES: readonly PropertyType[] = ['text', 'number', 'date', 'datetime', 'boolean', 'select', 'multi_select'];

export function isPropertyType(value: string): value is PropertyType {
  return (PROPERTY_TYPES as readonly string[]).includes(value);
}

/**
 * `link`: holds a record id (writes are checked, changes never move updated_at).
 * `aggregate` / `prediction`: computed by the service, read-only for clients.
 */
export type FieldRole = 'plain' | 'link' | 'aggregate' | 'prediction';

export interface FieldSpec {
  def: PropertyDefinition;
  type: PropertyType;
  role: FieldRole;
  linkTarget?: RecordResource | 'users';
}

export class ResourceSchema {
  readonly fields: FieldSpec[] = [];
  private readonly byName = new Map<string, FieldSpec>();

  constructor(readonly resource: RecordResource) {}

  add(spec: FieldSpec): void {
    if (this.byName.has(spec.def.api_name)) throw new Error(`duplicate api_name ${spec.def.api_name}`);
    this.fields.push(spec);
    this.byName.set(spec.def.api_name, spec);
  }

  remove(apiName: string): void {
    const index = this.fields.findIndex((f) => f.def.api_name === apiName);
    if (index >= 0) this.fields.splice(index, 1);
    this.byName.delete(apiName);
  }

  get(apiName: string): FieldSpec | undefined {
    return this.byName.get(apiName);
  }

  definitions(): PropertyDefinition[] {
    return this.fields.map((f) => ({ ...f.def, options: f.def.options.map((o) => ({ ...o })) }));
  }
}

function core(
  api_name: string,
  display_name: string,
  type: PropertyType,
  extra: Partial<Pick<FieldSpec, 'role' | 'linkTarget'>> & { required?: boolean; options?: PropertyOption[] } = {},
): FieldSpec {
  return {
    def: {
      api_name,
      display_name,
      // Links are plain ids on the wire: the service describes them as text.
      property_type: type,
      is_core: true,
      is_required_on_create: extra.required ?? false,
      options: (extra.options ?? []).map((o) => ({ ...o })),
    },
    type,
    role: extra.role ?? 'plain',
    ...(extra.linkTarget ? { linkTarget: extra.linkTarget } : {}),
  };
}

function custom(api_name: string, display_name: string, type: PropertyType, options: PropertyOption[] = []): FieldSpec {
  return {
    def: {
      api_name,
      display_name,
      property_type: type,
      is_core: false,
      is_required_on_create: false,
      options: options.map((o) => ({ ...o })),
    },
    type,
    role: 'plain',
  };
}

export const DEAL_STAGES: PropertyOption[] = [
  { value: 'stg_lead', label: 'リード' },
  { value: 'stg_qualify', label: '要件確認' },
  { value: 'stg_proposal', label: '提案' },
  { value: 'stg_negotiation', label: '交渉' },
  { value: 'stg_won', label: '受注' },
  { value: 'stg_lost', label: '失注' },
];

export const MEETING_GENRES: PropertyOption[] = [
  { value: 'gnr_first', label: '初回訪問' },
  { value: 'gnr_demo', label: 'デモ' },
  { value: 'gnr_followup', label: 'フォローアップ' },
  { value: 'gnr_online', label: 'オンライン商談' },
];

export const ACTIVITY_TYPES: PropertyOption[] = [
  { value: 'act_email', label: 'メール' },
  { value: 'act_call', label: '電話' },
  { value: 'act_visit', label: '訪問' },
];

const REGIONS: PropertyOption[] = [
  { value: 'reg_hokkaido', label: '北海道' },
  { value: 'reg_kanto', label: '関東' },
  { value: 'reg_kansai', label: '関西' },
  { value: 'reg_kyushu', label: '九州' },
];

const PRODUCTS: PropertyOption[] = [
  { value: 'prd_crm', label: 'CRM' },
  { value: 'prd_sfa', label: 'SFA' },
  { value: 'prd_ma', label: 'MA' },
  { value: 'prd_bi', label: 'BI' },
];

const TIERS: PropertyOption[] = [
  { value: 'tier_a', label: 'Aランク' },
  { value: 'tier_b', label: 'Bランク' },
  { value: 'tier_c', label: 'Cランク' },
];

const DEAL_TYPES: PropertyOption[] = [
  { value: 'typ_new', label: '新規' },
  { value: 'typ_upsell', label: 'アップセル' },
  { value: 'typ_renewal', label: '更新' },
];

const CHANNELS: PropertyOption[] = [
  { value: 'ch_web', label: 'Webフォーム' },
  { value: 'ch_event', label: '展示会' },
  { value: 'ch_referral', label: '紹介' },
];

function buildSchema(resource: RecordResource): ResourceSchema {
  const schema = new ResourceSchema(resource);
  const specs: FieldSpec[] = [];
  switch (resource) {
    case 'deals':
      specs.push(
        core('name', '商談名', 'text', { required: true }),
        core('amount', '金額', 'number'),
        core('close_date', '完了予定日', 'date'),
        core('stage', 'フェーズ', 'select', { options: DEAL_STAGES }),
        core('account_id', '取引先', 'text', { role: 'link', linkTarget: 'companies' }),
        core('owner_id', '担当者', 'text', { role: 'link', linkTarget: 'users' }),
        core('activity_count', '商談ログ数', 'number', { role: 'aggregate' }),
        core('last_activity_at', '最終活動日時', 'datetime', { role: 'aggregate' }),
        core('win_probability', '受注確度(予測)', 'number', { role: 'prediction' }),
        // Two custom api_names differing only in case: DuckDB folds identifier case.
        custom('Region01', '地域', 'select', REGIONS),
        custom('region01', '地域メモ', 'text'),
        custom('dK3mP9xQ', '見込み粗利', 'number'),
        custom('dA7vL2nR', '契約開始日', 'date'),
        custom('dT5wY8cE', '最終提案日時', 'datetime'),
        custom('dB4hJ6sU', '競合あり', 'boolean'),
        custom('dS2gF7kZ', '商談タイプ', 'select', DEAL_TYPES),
        custom('dM9qW3rT', '関心製品', 'multi_select', PRODUCTS),
      );
      break;
    case 'companies':
      specs.push(
        core('name', '取引先名', 'text', { required: true }),
        core('industry', '業種', 'text'),
        core('employees', '従業員数', 'number'),
        core('phone', '電話番号', 'text'),
        core('website', 'Webサイト', 'text'),
        core('billing_postal_code', '請求先郵便番号', 'text'),
        core('billing_state', '請求先都道府県', 'text'),
        core('billing_city', '請求先市区郡', 'text'),
        core('billing_street', '請求先町名・番地', 'text'),
        core('billing_country', '請求先国', 'text'),
        core('health_score', 'ヘルススコア(予測)', 'number', { role: 'prediction' }),
        custom('cR8tN2vB', '顧客ランク', 'select', TIERS),
        custom('cX4pL7mQ', '年間売上(百万円)', 'number'),
        custom('cD6kJ3wE', '設立日', 'date'),
        custom('cH9sF5tA', '最終監査日時', 'datetime'),
        custom('cP2zV8nY', '上場企業', 'boolean'),
        custom('cM5qR1xK', '利用中製品', 'multi_select', PRODUCTS),
        custom('cN3bT6uW', '社内メモ', 'text'),
      );
      break;
    case 'contacts':
      specs.push(
        core('last_name', '姓', 'text'),
        core('first_name', '名', 'text'),
        core('email', 'メールアドレス', 'text'),
        core('phone', '電話番号', 'text'),
        core('title', '役職', 'text'),
        core('account_id', '取引先', 'text', { role: 'link', linkTarget: 'companies' }),
        core('activity_count', '活動数', 'number', { role: 'aggregate' }),
        core('last_activity_at', '最終活動日時', 'datetime', { role: 'aggregate' }),
        custom('kL4mN8pQ', '流入経路', 'select', CHANNELS),
        custom('kS2dF6gH', 'スコア', 'number'),
        custom('kB9vC3xZ', '誕生日', 'date'),
        custom('kE7rT1yU', '最終ログイン日時', 'datetime'),
        custom('kO5iP2aS', 'メール配信停止', 'boolean'),
        custom('kJ8hG4fD', '興味分野', 'multi_select', PRODUCTS),
        custom('kW3eR9tY', '備考', 'text'),
      );
      break;
    case 'meeting-logs':
      specs.push(
        core('deal_id', '商談', 'text', { role: 'link', linkTarget: 'deals', required: true }),
        core('meeting_date', '実施日時', 'datetime'),
        core('meeting_name', '件名', 'text'),
        core('content', '内容', 'text'),
        core('genre', '種別', 'select', { options: MEETING_GENRES }),
        core('participants', '参加者', 'text'),
        custom('mQ7wE3rT', '所要時間(分)', 'number'),
        custom('mA5sD9fG', '次回予定日', 'date'),
        custom('mZ2xC8vB', '録画あり', 'boolean'),
        custom('mT6yU1iO', '温度感', 'select', [
          { value: 'tmp_hot', label: '高' },
          { value: 'tmp_warm', label: '中' },
          { value: 'tmp_cold', label: '低' },
        ]),
        custom('mK4jH7gF', '議題', 'multi_select', PRODUCTS),
      );
      break;
    case 'contact-activities':
      specs.push(
        core('contact_id', '取引先責任者', 'text', { role: 'link', linkTarget: 'contacts', required: true }),
        core('activity_type', '活動種別', 'select', { options: ACTIVITY_TYPES }),
        core('subject', '件名', 'text'),
        core('activity_date', '活動日時', 'datetime'),
        core('body', '本文', 'text'),
        custom('aP3oI9uY', '開封済み', 'boolean'),
        custom('aL6kJ2hG', '通話時間(秒)', 'number'),
        custom('aV8cX4zB', 'キャンペーン', 'select', CHANNELS),
      );
      break;
  }
  for (const spec of specs) schema.add(spec);
  return schema;
}

export function buildSchemas(): Record<RecordResource, ResourceSchema> {
  const out = {} as Record<RecordResource, ResourceSchema>;
  for (const resource of RECORD_RESOURCES) out[resource] = buildSchema(resource);
  return out;
}

/** The aggregate that recording an activity moves, by activity resource. */
export const ACTIVITY_PARENT: Record<'meeting-logs' | 'contact-activities', { parent: RecordResource; link: string; dateField: string }> = {
  'meeting-logs': { parent: 'deals', link: 'deal_id', dateField: 'meeting_date' },
  'contact-activities': { parent: 'contacts', link: 'contact_id', dateField: 'activity_date' },
};

export function isCustomApiName(name: string): boolean {
  return /^[A-Za-z0-9]{8}$/.test(name);
}
