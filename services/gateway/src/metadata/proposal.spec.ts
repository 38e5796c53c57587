import { numberPostgresCannotStore } from "./proposal";

describe("numberPostgresCannotStore", () => {
  it("finds a number beyond PostgreSQL's numeric digits, at its exact limits", () => {
    expect(numberPostgresCannotStore('{"a":1e-16383,"b":1.5e-16382,"c":1e131071}')).toBeUndefined();
    expect(numberPostgresCannotStore('{"a":[1,-1.5e-16383]}')).toBe("-1.5e-16383");
    expect(numberPostgresCannotStore('{"a":1e-16384}')).toBe("1e-16384");
    expect(numberPostgresCannotStore('{"a":1E131072}')).toBe("1E131072");
    // Leading zeros are no digits before the point: PostgreSQL stores these.
    expect(numberPostgresCannotStore('{"a":0e131072,"b":0.5e131072,"c":0.0e131073,"d":00012}')).toBeUndefined();
  });

  it("looks at numbers only, not at text inside strings, escaped quotes included", () => {
    expect(numberPostgresCannotStore('{"1e-99999":"2e-99999 \\" 3e-99999","n":12}')).toBeUndefined();
  });
});
