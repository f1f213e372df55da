// uPlot's browser build and stylesheet, imported as text (pages/assets/index.ts).
declare module 'uplot/dist/uPlot.iife.min.js' {
  const text: string
  export default text
}
declare module 'uplot/dist/uPlot.min.css' {
  const text: string
  export default text
}
declare module '*.sql' {
  const text: string
  export default text
}
