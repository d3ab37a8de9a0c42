import { useEffect, useRef, useState } from 'react';

interface DetectedBarcode {
  rawValue: string;
}
interface BarcodeDetectorLike {
  detect(source: HTMLVideoElement): Promise<DetectedBarcode[]>;
}
type BarcodeDetectorClass = new () => BarcodeDetectorLike;
const Detector = (globalThis as { BarcodeDetector?: BarcodeDetectorClass }).BarcodeDetector;

/** A code typed in (or from a hardware scanner acting as a keyboard), or read by the camera where the browser has `BarcodeDetector`. */
export function Scanner({ onCode }: { onCode: (code: string) => void }) {
  const [code, setCode] = useState('');
  const [camera, setCamera] = useState(false);
  return (
    <div className="scanner">
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (code.trim()) onCode(code.trim());
          setCode('');
        }}
      >
        <input
          name="code"
          aria-label="Code"
          placeholder="Code eingeben"
          value={code}
          onChange={(e) => setCode(e.target.value)}
          autoComplete="off"
        />
        <button type="submit" className="primary">
          Laden
        </button>
      </form>
      {Detector && (
        <button type="button" onClick={() => setCamera(!camera)}>
          {camera ? 'Kamera aus' : 'Kamera-Scan'}
        </button>
      )}
      {camera && Detector && <CameraScan Detector={Detector} onCode={onCode} />}
    </div>
  );
}

/** The back camera's picture, read a few times a second; a code read twice in a row is taken once. */
function CameraScan({ Detector, onCode }: { Detector: BarcodeDetectorClass; onCode: (code: string) => void }) {
  const video = useRef<HTMLVideoElement>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const report = useRef(onCode);
  report.current = onCode;
  useEffect(() => {
    let stream: MediaStream | undefined;
    let timer: ReturnType<typeof setInterval> | undefined;
    let last = '';
    const detector = new Detector();
    navigator.mediaDevices
      .getUserMedia({ video: { facingMode: 'environment' } })
      .then(async (s) => {
        stream = s;
        if (!video.current) return;
        video.current.srcObject = s;
        await video.current.play();
        timer = setInterval(async () => {
          const [found] = await detector.detect(video.current!).catch(() => []);
          if (found && found.rawValue !== last) report.current(found.rawValue);
          last = found?.rawValue ?? '';
        }, 300);
      })
      .catch((error: Error) => setProblem(error.message));
    return () => {
      clearInterval(timer);
      stream?.getTracks().forEach((t) => t.stop());
    };
  }, [Detector]);
  return problem ? <p className="problem">Kamera: {problem}</p> : <video ref={video} className="camera" muted playsInline />;
}
