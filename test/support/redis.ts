// The starter lives in devtools/ because the limiter benchmark needs it too; tests keep importing it from here.
export { startTestRedis, type TestRedis } from '../../devtools/redis-server.js';
