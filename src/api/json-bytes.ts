/**
 * JSON bodies parsed from their bytes without ever holding one large string. V8 keeps a string over 128 KiB
 * (a 200-record page of non-Latin text is about 200 KiB as UTF-16) in its large-object space, where each one
 * costs about a millisecond to allocate: more than parsing the page. A large body's top-level arrays (a list's
 * `results`) are decoded and parsed a group of elements at a time instead; everything else as one string.
 * JSON.parse still reads every byte, so a body is accepted exactly when JSON.parse would accept its text.
 */

/** Bodies up to this many bytes are decoded whole: their string (at most 2 bytes a byte) stays small. */
const WHOLE_BYTES = 32 * 1024;
/** Bytes of consecutive elements decoded and parsed together (well under V8's 128 KiB as UTF-16). */
const GROUP_BYTES = 48 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

const isWhitespace = (b: number | undefined): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** An array that is the value of a member of the top-level object: its key's bytes, brackets and elements. */
interface MemberArray {
  keyStart: number;
  keyEnd: number;
  open: number;
  close: number;
  /** [start, end) of each element, whitespace trimmed. */
  elements: number[];
}

/**
 * JSON.parse of the bytes' UTF-8 text; throws what JSON.parse throws for a body that is not JSON. A leading byte
 * order mark is skipped (RFC 8259 lets a parser ignore one). Every string comes out well formed: a lone UTF-16
 * surrogate (a `\ud83d` escape, text cut inside an emoji) is valid JSON, but neither UTF-8 nor DuckDB can hold
 * it, so it becomes U+FFFD, as the UTF-8 decoder makes of any byte that is no character.
 */
export function parseJsonBytes(bytes: Buffer): unknown {
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  const value = parseBody(body);
  // A surrogate can only arrive escaped: a body without `\ud` / `\uD` has none to mend.
  return body.includes('\\ud') || body.includes('\\uD') ? wellFormed(value) : value;
}

function parseBody(bytes: Buffer): unknown {
  if (bytes.length <= WHOLE_BYTES) return JSON.parse(bytes.toString('utf8'));
  const arrays = memberArrays(bytes);
  // Anything the scan does not follow (not an object, not well nested) is JSON.parse's to accept or reject.
  if (arrays === null) return JSON.parse(bytes.toString('utf8'));
  const pieces: Buffer[] = [];
  let from = 0;
  for (const array of arrays) {
    pieces.push(bytes.subarray(from, array.open + 1));
    from = array.close;
  }
  pieces.push(bytes.subarray(from));
  const envelope = JSON.parse(Buffer.concat(pieces).toString('utf8')) as Record<string, unknown>;
  // In order: of a key given twice, JSON.parse keeps the last value, and so does this (an array only if it is one).
  for (const array of arrays) {
    const key = JSON.parse(bytes.toString('utf8', array.keyStart, array.keyEnd)) as string;
    if (!Array.isArray(envelope[key])) continue;
    // Defined, not assigned: a member named `__proto__` is an own property in JSON.parse's result too.
    Object.defineProperty(envelope, key, {
      value: parseElements(bytes, array.elements),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return envelope;
}

/** The elements at [start, end) pairs of `spans`, parsed a group of at most GROUP_BYTES at a time. */
function parseElements(bytes: Buffer, spans: readonly number[]): unknown[] {
  const values: unknown[] = [];
  for (let first = 0; first < spans.length;) {
    let last = first;
    while (last + 2 < spans.length && spans[last + 3]! - spans[first]! <= GROUP_BYTES) last += 2;
    // The text between them holds only their separating commas (the scan saw to it).
    const group = JSON.parse(bracketed(bytes, spans[first]!, spans[last + 1]!)) as unknown[];
    for (const value of group) values.push(value);
    first = last + 2;
  }
  return values;
}

/** Where `bracketed` copies a group's bytes, reused group after group (a larger lone element gets its own). */
const groupBytes = Buffer.allocUnsafeSlow(GROUP_BYTES + 2);

/**
 * The text `[` + bytes [start, end) + `]`, decoded from one copy of the bytes: a text joined to its brackets would
 * be two strings JSON.parse has to flatten into a third first (a copy of the group's text, twice its bytes when
 * it is not Latin-1).
 */
function bracketed(bytes: Buffer, start: number, end: number): string {
  const length = end - start + 2;
  const copy = length <= groupBytes.length ? groupBytes : Buffer.allocUnsafe(length);
  copy[0] = OPEN_ARRAY;
  bytes.copy(copy, 1, start, end);
  copy[length - 1] = CLOSE_ARRAY;
  return copy.toString('utf8', 0, length);
}

/**
 * The arrays that are values of the top-level object's members, or null where the bytes are not an object whose
 * brackets and strings nest properly (the caller then leaves the body to JSON.parse whole).
 */
function memberArrays(bytes: Buffer): MemberArray[] | null {
  const n = bytes.length;
  let i = 0;
  while (isWhitespace(bytes[i])) i += 1;
  if (bytes[i] !== OPEN_OBJECT) return null;
  const open: number[] = [];
  const arrays: MemberArray[] = [];
  let keyStart = -1;
  let keyEnd = -1;
  let current: MemberArray | null = null;
  let elementStart = -1;
  const endElement = (at: number): boolean => {
    let start = elementStart;
    let end = at;
    while (start < end && isWhitespace(bytes[start])) start += 1;
    while (end > start && isWhitespace(bytes[end - 1])) end -= 1;
    if (start === end) return false;
    current!.elements.push(start, end);
    return true;
  };
  for (; i < n; i += 1) {
    const b = bytes[i]!;
    if (b === QUOTE) {
      const start = i;
      // The closing quote is the next one not escaped: preceded by an even number of backslashes.
      for (;;) {
        i = bytes.indexOf(QUOTE, i + 1);
        if (i < 0) return null;
        let k = i - 1;
        while (bytes[k] === BACKSLASH) k -= 1;
        if ((i - 1 - k) % 2 === 0) break;
      }
      // A string inside the top-level object itself: the last one before an array is that array's key.
      if (open.length === 1) {
        keyStart = start;
        keyEnd = i + 1;
      }
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      open.push(b);
      if (open.length === 2 && b === OPEN_ARRAY) {
        if (keyStart < 0) return null;
        current = { keyStart, keyEnd, open: i, close: -1, elements: [] };
        elementStart = i + 1;
      }
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (open.pop() !== (b === CLOSE_OBJECT ? OPEN_OBJECT : OPEN_ARRAY)) return null;
      if (open.length === 1 && current !== null) {
        // `[]` has no element; `[1,]` has an empty last one, which JSON.parse must be left to reject.
        if (!endElement(i) && current.elements.length > 0) return null;
        current.close = i;
        arrays.push(current);
        current = null;
      } else if (open.length === 0) {
        break; // what follows is the envelope's: JSON.parse rejects anything but whitespace there
      }
    } else if (b === COMMA && open.length === 2 && current !== null) {
      if (!endElement(i)) return null;
      elementStart = i + 1;
    }
  }
  return open.length === 0 ? arrays : null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `value` with every string (object keys too) made well formed: each lone surrogate replaced by U+FFFD. */
export function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(LONE_SURROGATE, '\uFFFD');
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) value[i] = wellFormed(value[i]);
    return value;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    const mended = key.replace(LONE_SURROGATE, '\uFFFD');
    const inner = wellFormed(object[key]);
    if (mended === key) object[key] = inner;
    else {
      delete object[key];
      Object.defineProperty(object, mended, { value: inner, writable: true, enumerable: true, configurable: true });
    }
  }
  return object;
}
