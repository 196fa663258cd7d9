#!/usr/bin/env node
'use strict';
// The operator tool, compiled by `npm install` (prepare) into dist/.
const { main } = require('../dist/src/cli/main.js');
main(process.argv.slice(2)).then((code) => process.exit(code));
