/**
 * The Sales Records Service simulator: a local HTTP server that follows service-spec.md rule by rule, with an
 * admin surface for ground truth, scripted changes and faults. It shares nothing with the client code.
 */
export { createSimulator, DEFAULT_KEYS, DEFAULT_SIZES } from './simulator.js';
export type {
  ClockSettings,
  CorruptedIds,
  CursorKind,
  FaultKind,
  FaultSettings,
  ListOrder,
  ListPageEvent,
  ListPageHook,
  MeetingLogView,
  MutationReport,
  PropertyDefinition,
  PropertyOption,
  PropertyValue,
  RecordCorruption,
  RecordResource,
  RecordView,
  Role,
  Simulator,
  SimulatorAdmin,
  SimulatorOptions,
  SimulatorSizes,
  StatsSnapshot,
  Summary,
  SummaryInput,
  SummarySelection,
  SummaryStatuses,
  Truth,
  UserCorruption,
  UserView,
} from './types.js';
export { RECORD_CORRUPTIONS, USER_CORRUPTIONS } from './types.js';
