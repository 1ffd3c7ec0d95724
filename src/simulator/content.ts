import type { Prng } from './prng.js';
import type { FieldSpec } from './schema.js';
import { formatDate, MICROS_PER_DAY } from './timestamps.js';
import type { RecordResource, SummarySelection, SummaryStatuses } from './types.js';
import type { StoredValue } from './values.js';

/** Realistic (Japanese B2B) values for generated records, activities and summaries. */

const LAST_NAMES = ['佐藤', '鈴木', '高橋', '田中', '伊藤', '渡辺', '山本', '中村', '小林', '加藤', '吉田', '山田'];
const LAST_ROMAJI = [
  'sato',
  'suzuki',
  'takahashi',
  'tanaka',
  'ito',
  'watanabe',
  'yamamoto',
  'nakamura',
  'kobayashi',
  'kato',
  'yoshida',
  'yamada',
];
const FIRST_NAMES = ['太郎', '花子', '健', '美咲', '翔', '陽菜', '大輔', 'さくら', '直樹', '愛'];
const FIRST_ROMAJI = ['taro', 'hanako', 'ken', 'misaki', 'sho', 'hina', 'daisuke', 'sakura', 'naoki', 'ai'];
const COMPANY_CORES = ['サクラ', '富士', '青空', 'ミライ', '大和', 'Acme', 'Nippon Data', 'ひかり', '若葉', 'Blue Ocean', '東邦', 'みなと'];
const COMPANY_SUFFIXES = ['商事', '工業', 'システムズ', 'ホールディングス', 'テック', '物産', ' Inc.', '製作所'];
const INDUSTRIES = ['製造', '小売', 'IT', '金融', '医療', '建設', '物流', '教育'];
const PLACES: Array<[string, string, string]> = [
  ['東京都', '千代田区', '100-0005'],
  ['大阪府', '大阪市北区', '530-0001'],
  ['愛知県', '名古屋市中区', '460-0008'],
  ['福岡県', '福岡市博多区', '812-0011'],
  ['北海道', '札幌市中央区', '060-0001'],
];
const TITLES = ['部長', '課長', '主任', '担当', '代表取締役', 'マネージャー', null];
const DEAL_WORDS = ['基幹システム刷新', 'SFA導入', '年間保守契約', 'クラウド移行', 'データ分析基盤', '追加ライセンス', 'PoC'];
const MEETING_WORDS = ['定例', 'キックオフ', '要件ヒアリング', 'デモ', '価格交渉', '契約確認', '振り返り'];
const TEXT_SNIPPETS = ['至急対応', '要フォロー', '予算確保済み', '決裁者同席', 'Q3検討', 'note: follow up', '特記事項なし'];
const SUBJECTS = ['お打ち合わせのお礼', 'ご提案資料の送付', 'お見積りの件', 'セミナーのご案内', '日程調整のお願い'];

export interface ValueContext {
  /** Lower and upper bound (µs) for generated dates and datetimes. */
  fromMicros: number;
  toMicros: number;
}

export function randomMicros(prng: Prng, from: number, to: number): number {
  const span = Math.max(0, to - from);
  const ms = Math.floor(span / 1000);
  return from + prng.int(ms + 1) * 1000 + prng.int(1000);
}

export function personName(prng: Prng): { last: string; first: string; email: string } {
  const li = prng.int(LAST_NAMES.length);
  const fi = prng.int(FIRST_NAMES.length);
  const domain = prng.pick(['example.co.jp', 'example.com', 'Example.JP']);
  const local = `${FIRST_ROMAJI[fi]}.${LAST_ROMAJI[li]}${prng.int(1000)}`;
  // Some addresses carry capitals: the users filter is case-insensitive.
  const email = prng.chance(0.2) ? `${local.charAt(0).toUpperCase()}${local.slice(1)}@${domain}` : `${local}@${domain.toLowerCase()}`;
  return { last: LAST_NAMES[li] as string, first: FIRST_NAMES[fi] as string, email };
}

export function companyName(prng: Prng): string {
  const core = prng.pick(COMPANY_CORES);
  const suffix = prng.pick(COMPANY_SUFFIXES);
  return prng.chance(0.5) ? `株式会社${core}${suffix}` : `${core}${suffix}`;
}

/** A value of the right type for any custom (or plain core) property. */
export function randomValue(spec: FieldSpec, prng: Prng, ctx: ValueContext): StoredValue {
  switch (spec.type) {
    case 'text':
      return `${prng.pick(TEXT_SNIPPETS)} ${prng.int(100)}`;
    case 'number':
      return prng.chance(0.3) ? prng.int(100_000) / 100 : prng.int(1_000_000);
    case 'boolean':
      return prng.chance(0.5);
    case 'date':
      return formatDate(randomMicros(prng, ctx.fromMicros, ctx.toMicros));
    case 'datetime':
      return randomMicros(prng, ctx.fromMicros, ctx.toMicros);
    case 'select':
      return spec.def.options.length > 0 ? prng.pick(spec.def.options).value : null;
    case 'multi_select': {
      const picked = spec.def.options.filter(() => prng.chance(0.4)).map((o) => o.value);
      return picked.length > 0 ? picked.join(';') : (spec.def.options[0]?.value ?? null);
    }
  }
}

/** Core values of a new record; links are chosen by `pickLink` (null when there is nothing to link). */
export function coreValues(
  resource: RecordResource,
  prng: Prng,
  ctx: ValueContext,
  pickLink: (target: RecordResource | 'users') => string | null,
): Record<string, StoredValue> {
  switch (resource) {
    case 'deals': {
      const stage = prng.pick(['stg_lead', 'stg_qualify', 'stg_proposal', 'stg_negotiation', 'stg_won', 'stg_lost']);
      return {
        name: `${prng.pick(DEAL_WORDS)} ${prng.between(1, 999)}`,
        amount: prng.chance(0.9) ? prng.between(10, 5000) * 10_000 : null,
        close_date: formatDate(randomMicros(prng, ctx.fromMicros, ctx.toMicros + 180 * MICROS_PER_DAY)),
        stage,
        account_id: prng.chance(0.95) ? pickLink('companies') : null,
        owner_id: prng.chance(0.95) ? pickLink('users') : null,
      };
    }
    case 'companies': {
      const [state, city, postal] = prng.pick(PLACES);
      return {
        name: companyName(prng),
        industry: prng.chance(0.85) ? prng.pick(INDUSTRIES) : null,
        employees: prng.chance(0.8) ? prng.between(5, 20_000) : null,
        phone: `0${prng.between(3, 99)}-${prng.between(1000, 9999)}-${prng.between(1000, 9999)}`,
        website: prng.chance(0.7) ? `https://www.example-${prng.int(10_000)}.co.jp/` : null,
        billing_postal_code: postal,
        billing_state: state,
        billing_city: city,
        billing_street: `${prng.between(1, 9)}-${prng.between(1, 30)}-${prng.between(1, 20)}`,
        billing_country: '日本',
      };
    }
    case 'contacts': {
      const person = personName(prng);
      const hasLast = prng.chance(0.95);
      return {
        last_name: hasLast ? person.last : null,
        first_name: prng.chance(0.9) ? person.first : null,
        email: !hasLast || prng.chance(0.85) ? person.email : null,
        phone: prng.chance(0.6) ? `090-${prng.between(1000, 9999)}-${prng.between(1000, 9999)}` : null,
        title: prng.pick(TITLES),
        account_id: prng.chance(0.9) ? pickLink('companies') : null,
      };
    }
    case 'meeting-logs': {
      const word = prng.pick(MEETING_WORDS);
      return {
        deal_id: pickLink('deals'),
        meeting_date: randomMicros(prng, ctx.fromMicros, ctx.toMicros),
        meeting_name: `${word} (${prng.between(1, 12)}回目)`,
        content: `${word}を実施。${prng.pick(TEXT_SNIPPETS)}。次回までに資料を準備する。`,
        genre: prng.pick(['gnr_first', 'gnr_demo', 'gnr_followup', 'gnr_online']),
        participants: prng.chance(0.8) ? `${prng.pick(LAST_NAMES)}、${prng.pick(LAST_NAMES)}` : null,
      };
    }
    case 'contact-activities':
      return {
        contact_id: pickLink('contacts'),
        activity_type: prng.pick(['act_email', 'act_call', 'act_visit']),
        subject: prng.pick(SUBJECTS),
        activity_date: randomMicros(prng, ctx.fromMicros, ctx.toMicros),
        body: prng.chance(0.7) ? `${prng.pick(SUBJECTS)}。${prng.pick(TEXT_SNIPPETS)}。` : null,
      };
  }
}

export interface GeneratedSummary {
  summary_type: string;
  result_type: 'text' | 'select';
  text: string | null;
  selections: SummarySelection[];
  reason: string;
  status: string;
}

/** The lifecycle state of a summary; its status name comes from the configured vocabulary. */
export type SummaryState = 'pending' | 'completed' | 'failed';

/** pending → statuses.pending, completed → final[0], failed → final[1] (final[0] when there is no second name). */
export function summaryStatusName(statuses: SummaryStatuses, state: SummaryState): string {
  if (state === 'pending') return statuses.pending;
  return (state === 'failed' ? (statuses.final[1] ?? statuses.final[0]) : statuses.final[0]) as string;
}

const TEMPERATURES = ['hot', 'warm', 'cold'];
const BANT = ['budget', 'authority', 'need', 'timing'];

/** One summary of the given kind: pending ones carry no result yet. */
export function generatedSummary(
  prng: Prng,
  summaryType: 'overview' | 'next_action' | 'temperature' | 'bant',
  state: SummaryState,
  statusName: string = state,
): GeneratedSummary {
  const select = summaryType === 'temperature' || summaryType === 'bant';
  const done = state === 'completed';
  let selections: SummarySelection[] = [];
  if (select && done) {
    const pool = summaryType === 'temperature' ? [prng.pick(TEMPERATURES)] : BANT.filter(() => prng.chance(0.5));
    selections = pool.map((value, i) => ({ value, level: prng.between(1, 5), order: i + 1 }));
  }
  let text: string | null = null;
  if (!select && done) {
    text =
      summaryType === 'overview'
        ? `${prng.pick(MEETING_WORDS)}について協議。${prng.pick(TEXT_SNIPPETS)}。`
        : `${prng.pick(['見積書を送付', '決裁者と面談設定', 'デモ環境を用意', '契約書ドラフト送付'])}する。`;
  }
  return {
    summary_type: summaryType,
    result_type: select ? 'select' : 'text',
    text,
    selections,
    reason: done && prng.chance(0.5) ? '会話内容から判断' : '',
    status: statusName,
  };
}

export const SUMMARY_TYPES = ['overview', 'next_action', 'temperature', 'bant'] as const;
