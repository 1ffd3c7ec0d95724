// In devtools/ beside the Redis starter that needs it; tests keep importing it from here.
export { freePort } from '../../devtools/ports.js';
