/**
 * A body as the bytes of `JSON.stringify(body, null, indent)`, without one large string for a list page: V8 keeps
 * a string over 128 KiB in its large-object space, about a millisecond to allocate, which a bench sharing the
 * machine with the simulator would count against the sync. A plain object's array members are serialized an
 * element at a time; anything else (an indented layout included) as JSON.stringify makes it.
 */
export function jsonBytes(body: unknown, indent?: number): Buffer {
  if (indent !== undefined || body === null || typeof body !== 'object' || Array.isArray(body) || 'toJSON' in body) {
    return Buffer.from(JSON.stringify(body, null, indent) ?? 'null');
  }
  const pieces: Buffer[] = [];
  let text = '{';
  let first = true;
  for (const [key, value] of Object.entries(body)) {
    const head = `${first ? '' : ','}${JSON.stringify(key)}:`;
    if (Array.isArray(value) && !('toJSON' in value)) {
      pieces.push(Buffer.from(`${text}${head}[`));
      value.forEach((element: unknown, i) => pieces.push(Buffer.from(`${i === 0 ? '' : ','}${JSON.stringify(element) ?? 'null'}`)));
      text = ']';
    } else {
      const member = JSON.stringify(value);
      if (member === undefined) continue; // as JSON.stringify leaves out an undefined member
      text += head + member;
    }
    first = false;
  }
  pieces.push(Buffer.from(`${text}}`));
  return Buffer.concat(pieces);
}
