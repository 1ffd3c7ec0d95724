import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { ResourceName } from '../core/resources.js';

/** Lease keys are per warehouse file: two warehouses (two organizations) never wait for each other. */
export function warehouseId(warehousePath: string): string {
  return createHash('sha256').update(resolve(warehousePath)).digest('hex').slice(0, 16);
}

export function warehouseLeaseKey(prefix: string, warehousePath: string): string {
  return `${prefix}:lease:warehouse:${warehouseId(warehousePath)}`;
}

export function resourceLeaseKey(prefix: string, warehousePath: string, resource: ResourceName): string {
  return `${prefix}:lease:walk:${warehouseId(warehousePath)}:${resource}`;
}
