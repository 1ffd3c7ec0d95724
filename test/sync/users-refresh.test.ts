import { describe, expect, it } from 'vitest';
import { listingNamesTheGone } from '../../src/core/user-listing.js';
import { unlisted } from '../../src/sync/users-refresh.js';

const user = (id: string) => ({ id, email: `${id}@example.com`, name: id, is_active: true });
const reject = (id: string | null) => ({ id, raw: '{}', reason: 'broken' });
const ID = (n: number) => `U${String(n).padStart(17, '0')}`;

describe('which stored users a listing leaves out', () => {
  it('names the live users neither listed nor rejected by id, in stored order', () => {
    expect(unlisted([ID(1), ID(2), ID(3), ID(4)], [user(ID(3))], [reject(ID(1))])).toEqual([ID(2), ID(4)]);
  });

  it('a listing tells who is gone unless it is empty or rejected a user it cannot name', () => {
    expect(listingNamesTheGone(3, [])).toBe(true);
    expect(listingNamesTheGone(0, [reject(ID(1))])).toBe(true);
    expect(listingNamesTheGone(0, [])).toBe(false);
    expect(listingNamesTheGone(3, [reject(null)])).toBe(false);
    expect(listingNamesTheGone(3, [reject('not-an-id')])).toBe(false);
  });
});
