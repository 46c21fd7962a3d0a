export interface ResultBounds {
  /** Rows kept; the query's further rows are never read. */
  maxRows: number;
  /** JSON bytes of the kept rows together; a result needing more fails. */
  maxBytes: number;
  /** JSON bytes per batch sent on: many small messages rather than one large one. */
  batchBytes: number;
}

/** The result needs more bytes than its bound: `rows` is where it crossed. */
export class ResultTooLarge extends Error {
  constructor(
    readonly maxBytes: number,
    readonly rows: number,
  ) {
    super(`the result exceeds ${maxBytes} bytes of JSON at row ${rows}`);
  }
}

/**
 * A query result read row by row under a row cap and a byte cap, measured on each row's JSON as it is
 * produced, and cut into batches: the engine process never holds more than the caps allow, and the
 * service receives the rows in pieces it parses one at a time.
 */
export class BoundedResult<Row = Record<string, unknown>> {
  private rows = 0;
  private bytes = 0;
  private batch: Row[] = [];
  private batchBytes = 0;

  constructor(
    private readonly bounds: ResultBounds,
    /** JSON bytes a row takes in the answer beyond its own JSON (the keys of a row kept as an array of values). */
    private readonly extraBytesPerRow = 0,
  ) {}

  /** Whether the row cap is reached: the next row is not read. */
  get full(): boolean {
    return this.rows >= this.bounds.maxRows;
  }

  get rowCount(): number {
    return this.rows;
  }

  /** Keeps `row`; returns a batch when one is complete. Throws ResultTooLarge past the byte cap. */
  add(row: Row): Row[] | undefined {
    // the comma that separates it from the previous row in the answer counts too
    const size = this.sizeOf(row) + (this.rows === 0 ? 0 : 1);
    if (this.bytes + size > this.bounds.maxBytes) throw new ResultTooLarge(this.bounds.maxBytes, this.rows + 1);
    this.rows += 1;
    this.bytes += size;
    this.batch.push(row);
    this.batchBytes += size;
    return this.batchBytes >= this.bounds.batchBytes ? this.take() : undefined;
  }

  private sizeOf(row: Row): number {
    try {
      return Buffer.byteLength(JSON.stringify(row)) + this.extraBytesPerRow;
    } catch (error) {
      if (isStringTooLong(error)) throw new ResultTooLarge(this.bounds.maxBytes, this.rows + 1);
      throw error;
    }
  }

  /** The rows kept since the last batch (possibly none). */
  take(): Row[] {
    const batch = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    return batch;
  }
}

/** JavaScript refused to build a string that long (about 512 MiB): too large for any byte cap. */
export function isStringTooLong(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    (error as Error & { code?: string }).code === 'ERR_STRING_TOO_LONG' || (error instanceof RangeError && error.message.includes('Invalid string length'))
  );
}
