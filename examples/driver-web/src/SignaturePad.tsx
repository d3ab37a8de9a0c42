import { useEffect, useRef, useState } from 'react';

/** A signature drawn with a finger, a pen or the mouse; `onSigned` gets it as a PNG after each stroke (null when cleared). */
export function SignaturePad({ label, onSigned }: { label: string; onSigned: (png: Blob | null) => void }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const drawing = useRef(false);
  const [signed, setSigned] = useState(false);

  useEffect(() => {
    const c = canvas.current!;
    const scale = devicePixelRatio || 1;
    c.width = c.clientWidth * scale;
    c.height = c.clientHeight * scale;
    const g = c.getContext('2d')!;
    g.scale(scale, scale);
    g.lineWidth = 2.5;
    g.lineCap = 'round';
    g.lineJoin = 'round';
    g.strokeStyle = '#111';
  }, []);

  const point = (e: React.PointerEvent<HTMLCanvasElement>) => {
    const box = e.currentTarget.getBoundingClientRect();
    return [e.clientX - box.left, e.clientY - box.top] as const;
  };
  const g = () => canvas.current!.getContext('2d')!;

  return (
    <div className="signature">
      <div className="row">
        <span className="label">{label}</span>
        <button
          type="button"
          className="small"
          onClick={() => {
            g().clearRect(0, 0, canvas.current!.width, canvas.current!.height);
            setSigned(false);
            onSigned(null);
          }}
        >
          Löschen
        </button>
      </div>
      <canvas
        ref={canvas}
        aria-label={label}
        data-signed={signed}
        onPointerDown={(e) => {
          e.currentTarget.setPointerCapture(e.pointerId);
          drawing.current = true;
          g().beginPath();
          g().moveTo(...point(e));
        }}
        onPointerMove={(e) => {
          if (!drawing.current) return;
          g().lineTo(...point(e));
          g().stroke();
        }}
        onPointerUp={() => {
          if (!drawing.current) return;
          drawing.current = false;
          setSigned(true);
          canvas.current!.toBlob((png) => onSigned(png), 'image/png');
        }}
      />
    </div>
  );
}
