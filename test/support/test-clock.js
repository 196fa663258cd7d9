// A clock for a service run as its own process in a test (loaded with --require): Date.now starts
// at TEST_CLOCK_AT (ms since 1970) and moves on with real time; each SIGUSR2 moves it forward by
// TEST_CLOCK_JUMP_MS and prints "test clock moved", so a test can cross a midnight when it chooses.
const realNow = Date.now.bind(Date);
let offset = Number(process.env.TEST_CLOCK_AT) - realNow();
Date.now = () => realNow() + offset;
process.on('SIGUSR2', () => {
  offset += Number(process.env.TEST_CLOCK_JUMP_MS);
  process.stdout.write(`test clock moved to ${new Date(Date.now()).toISOString()}\n`);
});
