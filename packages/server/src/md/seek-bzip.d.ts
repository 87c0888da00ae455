declare module "seek-bzip" {
  interface OutStream {
    writeByte(byte: number): void;
  }
  const Bunzip: { decode(input: Uint8Array, output: OutStream, multistream?: boolean): OutStream };
  export default Bunzip;
}
