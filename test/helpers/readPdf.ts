/** The text of every page and the number of images drawn, read back with mupdf. */
export async function readPdf(pdf: Buffer) {
  const mupdf = await import('mupdf');
  const document = mupdf.Document.openDocument(pdf, 'application/pdf');
  const pages: string[] = [];
  let images = 0;
  for (let i = 0; i < document.countPages(); i++) {
    const text = document.loadPage(i).toStructuredText('preserve-whitespace,preserve-images');
    pages.push(text.asText());
    text.walk({
      onImageBlock: () => {
        images += 1;
      },
    });
  }
  const title = document.getMetaData('info:Title');
  document.destroy();
  // Lines are joined so that a value wrapped in a table cell still reads as one phrase.
  return { pages, text: pages.join('\n').replace(/\s+/g, ' '), images, title };
}
