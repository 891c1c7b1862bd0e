/// The size a picture is scaled to in a window: as large as the window allows with its
/// display aspect ratio kept (letterboxed), in whole pixels of at least one. Pure: the
/// expert's window scales every frame to it in the pipeline and draws it centred.
struct PictureFit: Equatable, Sendable {
    var width: Int
    var height: Int

    /// `source`: the decoded frame's size; `pixelAspect`: its pixel aspect ratio (n/d);
    /// `window`: the window's size.
    init(source: (width: Int, height: Int), pixelAspect: (numerator: Int, denominator: Int) = (1, 1),
         window: (width: Int, height: Int)) {
        guard source.width > 0, source.height > 0, window.width > 0, window.height > 0,
              pixelAspect.numerator > 0, pixelAspect.denominator > 0 else {
            self.init(width: max(1, window.width), height: max(1, window.height))
            return
        }
        // Compared in integers (width × n × H against height × d × W): no rounding decides
        // which side fills the window.
        let wide = source.width * pixelAspect.numerator, tall = source.height * pixelAspect.denominator
        if wide * window.height >= tall * window.width {
            self.init(width: window.width, height: max(1, (window.width * tall + wide / 2) / wide))
        } else {
            self.init(width: max(1, (window.height * wide + tall / 2) / tall), height: window.height)
        }
    }

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}
