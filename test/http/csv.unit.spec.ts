import { csvField, csvText } from '../../src/http/csv';

describe('CSV fields (RFC 4180)', () => {
  it.each([
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\r\nlines', '"two\r\nlines"'],
    ['line\nbreak', '"line\nbreak"'],
    [' padded', '" padded"'],
    ['', ''],
    [12, '12'],
    ['-0.000066', '-0.000066'],
    // What a spreadsheet would run as a formula is made text.
    ['=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"'],
    ['+1+2', "'+1+2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['-cmd', "'-cmd"],
  ])('%j is written %j', (value, written) => expect(csvField(value)).toBe(written));
});

describe('CSV text', () => {
  it('ends every line with CRLF and quotes each field as it needs', () => {
    expect(
      csvText([
        ['a', 'b,c'],
        [1, '=x'],
      ]),
    ).toBe('a,"b,c"\r\n1,\'=x\r\n');
  });
});
